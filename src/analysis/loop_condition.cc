#include "analysis/loop_condition.h"

#include <unordered_set>

namespace sdx::analysis {
namespace {

// The value of a constant scalar (an initializer or a Constant node, through Identity/Cast), if v is one.
std::optional<double> constant_scalar(const ir::Value* v) {
  for (int depth = 0; v && depth < 16; ++depth) {
    const Tensor* t = nullptr;
    if (v->is_initializer() && !v->is_graph_input()) t = &v->initializer();
    const ir::Node* p = v->producer();
    if (!t && p && p->op_type() == "Constant") {
      if (const ir::Attribute* a = p->attr("value"); a && a->t.defined()) t = &a->t;
      else if (const ir::Attribute* f = p->attr("value_float")) return f->f;
      else if (const ir::Attribute* i = p->attr("value_int")) return static_cast<double>(i->i);
    }
    if (t) {
      if (t->numel() != 1) return std::nullopt;
      Result<ValueStats> s = summarize(*t);
      if (!s.is_ok()) return std::nullopt;
      return s.value().mean;
    }
    if (!p || (p->op_type() != "Identity" && p->op_type() != "Cast")) return std::nullopt;
    v = p->input(0);
  }
  return std::nullopt;
}

struct Carried {
  int index = -1;
  StatField field = StatField::kMean;
  bool reads_new = true;
};

// The carried value v is (its new or its incoming value), through ops that keep a scalar's value and at
// most one reduction to a scalar.
Carried trace_carried(const ir::Graph& body, const ir::Value* v) {
  const int carried = static_cast<int>(body.inputs().size()) - 2;
  bool reduced = false;
  Carried c;
  for (int depth = 0; v && depth < 64; ++depth) {
    for (int k = 0; k < carried; ++k) {
      if (v == body.outputs()[static_cast<size_t>(1 + k)]) return {k, c.field, true};
      if (v == body.inputs()[static_cast<size_t>(2 + k)]) return {k, c.field, false};
    }
    const ir::Node* p = v->producer();
    if (!p) return {};
    const std::string& op = p->op_type();
    if (op == "Identity" || op == "Cast" || op == "Squeeze" || op == "Unsqueeze" || op == "Reshape" || op == "Flatten") {
      v = p->input(0);
      continue;
    }
    std::optional<StatField> f;
    if (op == "ReduceMax") f = StatField::kMax;
    if (op == "ReduceMin") f = StatField::kMin;
    if (op == "ReduceMean") f = StatField::kMean;
    if (op == "ReduceL2") f = StatField::kNorm;
    if (!f || reduced) return {};
    reduced = true;
    c.field = *f;
    v = p->input(0);
  }
  return {};
}

Comparison swapped(Comparison op) {  // c OP x  <=>  x swapped(OP) c
  switch (op) {
    case Comparison::kLess: return Comparison::kGreater;
    case Comparison::kLessEqual: return Comparison::kGreaterEqual;
    case Comparison::kGreater: return Comparison::kLess;
    case Comparison::kGreaterEqual: return Comparison::kLessEqual;
    case Comparison::kNotEqual: return Comparison::kNotEqual;
  }
  return op;
}

Comparison negated(Comparison op) {  // not (x OP c)  <=>  x negated(OP) c (NaN aside)
  switch (op) {
    case Comparison::kLess: return Comparison::kGreaterEqual;
    case Comparison::kLessEqual: return Comparison::kGreater;
    case Comparison::kGreater: return Comparison::kLessEqual;
    case Comparison::kGreaterEqual: return Comparison::kLess;
    case Comparison::kNotEqual: return Comparison::kNotEqual;  // not reached: Equal is handled apart
  }
  return op;
}

// Carried values (and whether the condition input) reachable backwards from v inside the body.
void collect_dependencies(const ir::Graph& body, const ir::Value* cond, LoopCondition& out) {
  std::unordered_set<const ir::Node*> nodes;
  for (const auto& n : body.nodes()) nodes.insert(n.get());
  std::vector<bool> seen_carried(body.inputs().size(), false);
  std::unordered_set<const ir::Value*> seen;
  std::vector<const ir::Value*> work{cond};
  while (!work.empty()) {
    const ir::Value* v = work.back();
    work.pop_back();
    if (!v || !seen.insert(v).second) continue;
    for (size_t i = 2; i < body.inputs().size(); ++i)
      if (v == body.inputs()[i]) seen_carried[i] = true;
    const ir::Node* p = v->producer();
    if (!p || !nodes.count(p)) continue;  // a body input, a constant, or an outer-scope value
    for (const ir::Value* in : p->inputs()) work.push_back(in);
  }
  for (size_t i = 2; i < seen_carried.size(); ++i)
    if (seen_carried[i]) out.depends_on.push_back(static_cast<int>(i) - 2);
}

}  // namespace

LoopCondition analyze_loop_condition(const ir::Graph& body) {
  LoopCondition out;
  if (body.inputs().size() < 2 || body.outputs().empty()) {
    out.note = "the body has no condition";
    return out;
  }
  const ir::Value* cond = body.outputs()[0];
  collect_dependencies(body, cond, out);
  // Through Identity and Not to the comparison.
  const ir::Value* v = cond;
  bool negate = false;
  for (int depth = 0; v && depth < 16; ++depth) {
    if (v == body.inputs()[1]) {
      out.always_true = true;
      out.note = "the condition output is the condition input passed through: nothing in the body can end the loop";
      return out;
    }
    if (std::optional<double> c = constant_scalar(v)) {
      if ((*c != 0) != negate) {
        out.always_true = true;
        out.note = "the condition output is the constant true";
      } else {
        out.note = "the condition output is the constant false";
      }
      return out;
    }
    const ir::Node* p = v->producer();
    if (!p || (p->op_type() != "Identity" && p->op_type() != "Not")) break;
    if (p->op_type() == "Not") negate = !negate;
    v = p->input(0);
  }
  const ir::Node* p = v ? v->producer() : nullptr;
  std::optional<Comparison> op;
  if (p) {
    const std::string& t = p->op_type();
    if (t == "Less") op = Comparison::kLess;
    if (t == "LessOrEqual") op = Comparison::kLessEqual;
    if (t == "Greater") op = Comparison::kGreater;
    if (t == "GreaterOrEqual") op = Comparison::kGreaterEqual;
    if (t == "Equal" && negate) op = Comparison::kNotEqual;
  }
  if (!op || p->num_inputs() != 2) {
    out.note = "not a comparison of one carried scalar with a constant";
    return out;
  }
  const bool equal_under_not = p->op_type() == "Equal";
  Carried c;
  std::optional<double> threshold;
  if ((threshold = constant_scalar(p->input(1)))) {
    c = trace_carried(body, p->input(0));
  } else if ((threshold = constant_scalar(p->input(0)))) {
    c = trace_carried(body, p->input(1));
    op = swapped(*op);
  }
  if (!threshold || c.index < 0) {
    out.note = "not a comparison of one carried scalar with a constant";
    return out;
  }
  if (negate && !equal_under_not) op = negated(*op);
  out.form = ConditionForm{body.inputs()[static_cast<size_t>(2 + c.index)]->name(), *op, *threshold};
  out.carried = c.index;
  out.field = c.field;
  out.reads_new_value = c.reads_new;
  return out;
}

std::string LoopCondition::describe(const std::vector<std::string>& carried_names) const {
  if (form) {
    std::string s = form->describe();
    if (field != StatField::kMean) s += std::string(" (the ") + stat_field_name(field) + " of " + form->variable + ")";
    return s;
  }
  if (always_true) return note;
  std::string s;
  for (int k : depends_on)
    if (k < static_cast<int>(carried_names.size())) s += (s.empty() ? "" : ", ") + carried_names[static_cast<size_t>(k)];
  s = s.empty() ? "depends on no carried value" : "depends on " + s;
  return note.empty() ? s : s + " (" + note + ")";
}

}  // namespace sdx::analysis
