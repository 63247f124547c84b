// LoopInvariantHoistingOptimizations (hoist_loop_invariants): work a Loop body redoes identically on every
// iteration is done once, before the Loop.
//
//   Loop(M=64, cond, h) body(i, c, h) { w2 = Mul(w, s); x = Gather(xs, i); h' = Tanh(MatMul(h, w2) + x) }
//   ->  w2 = Mul(w, s); Loop(M=64, cond, h) body(i, c, h) { x = Gather(xs, i); h' = Tanh(MatMul(h, w2) + x) }
//
// A body node is invariant when every input it reads is an outer-scope value, a body initializer, or the
// output of another invariant node (so never the iteration number, the condition or a carried value, nor
// anything computed from them), and it is:
//  - deterministic and without side effects: not RandomNormal/RandomUniform[Like], Multinomial, Bernoulli,
//    Dropout; of the ai.onnx, ai.onnx.ml or sdx domain (other domains' semantics are unknown);
//  - without subgraphs (a nested If/Loop/Scan stays: its body is optimized with the body's own session);
//  - reading every input it names (an omitted input is fine) and producing only plain values.
// Constant and Identity nodes are invariant too, but move only when a moved node reads them (on their own
// they gain nothing).
// A hoisted node is copied into the Loop's graph before the Loop (its values named `<name>_hoisted`, made
// unique over the whole model), body initializers it reads are copied there as initializers, and the body
// reads the copies from the outer scope. A hoisted value the body outputs (a carried or scan output) stays a
// body value, produced by an Identity of the outer copy.
//
// Safety (a Loop that runs 0 iterations must behave as before): a hoisted node runs even when the body
// would not have. So:
//  - when the Loop surely runs at least once -- the trip count M is absent or a constant >= 1, and the
//    initial condition is absent or a constant true -- every invariant node is hoisted: whatever it does (or
//    fails with), the first iteration would have done it with the same inputs;
//  - otherwise (M or the condition only known at run time, M = 0, condition false) only nodes that cannot
//    fail given their inputs' static types are hoisted: Constant; unary elementwise float math (Relu, Tanh,
//    Sigmoid, Exp, Neg, Abs, Sqrt, Log, Erf, Sin, Cos, Softplus, Softsign, Reciprocal, Floor, Ceil, Round,
//    Sign, LeakyRelu, Elu, Selu, HardSigmoid, Identity) on an input known to be a float tensor; binary
//    elementwise Add/Sub/Mul/Div/Pow/Max/Min on two float tensors of one element type and fully static
//    shapes that broadcast; Cast between numeric types. Their cost on a 0-iteration run is wasted work, not a
//    wrong answer or a new error.
// Scan bodies are not entered (their inputs are slices, and each Scan's body is small in practice).
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/op_schema.h"
#include "opt/pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

const Tensor* constant_tensor(const ir::Value* v) {
  if (!v) return nullptr;
  if (const Tensor* t = constant_value(v)) return t;
  const ir::Node* p = v->producer();
  if (!p || p->op_type() != "Constant" || !p->domain().empty()) return nullptr;
  const ir::Attribute* a = p->attr("value");
  return a && a->type == ir::AttrType::kTensor ? &a->t : nullptr;
}

bool is_random(const std::string& op) {
  static const std::set<std::string> kRandom = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"};
  return kRandom.count(op) > 0;
}

bool known_domain(const std::string& domain) {
  const std::string d = ir::normalize_domain(domain);
  return d.empty() || d == "ai.onnx.ml" || d == "sdx";
}

// The Loop runs its body at least once: M absent or a constant >= 1, the initial condition absent or a
// constant true.
bool runs_at_least_once(const ir::Node& loop) {
  if (const ir::Value* m = loop.input(0)) {
    const Tensor* t = constant_tensor(m);
    if (!t || t->numel() != 1 || t->dtype() != DType::kInt64 || t->data<int64_t>()[0] < 1) return false;
  }
  if (const ir::Value* c = loop.input(1)) {
    const Tensor* t = constant_tensor(c);
    if (!t || t->numel() != 1 || t->dtype() != DType::kBool || t->data<uint8_t>()[0] == 0) return false;
  }
  return true;
}

bool is_float_tensor(const ir::Value* v) {
  return v && v->type().kind == ir::TypeInfo::Kind::kTensor && is_float(v->type().elem);
}

// Two fully static shapes that broadcast (numpy rules).
bool broadcasts(const ir::Value* a, const ir::Value* b) {
  auto sa = static_shape(a), sb = static_shape(b);
  if (!sa || !sb) return false;
  for (size_t k = 1; k <= std::min(sa->size(), sb->size()); ++k) {
    const int64_t x = (*sa)[sa->size() - k], y = (*sb)[sb->size() - k];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

// The node cannot fail at run time given its inputs' static types (the rule for Loops that may not run).
bool cannot_fail(const ir::Node& n) {
  if (!n.domain().empty()) return false;
  static const std::set<std::string> kUnary = {
      "Relu",  "Tanh", "Sigmoid",   "Exp",      "Neg",      "Abs",         "Sqrt",    "Log",
      "Erf",   "Sin",  "Cos",       "Softplus", "Softsign", "Reciprocal",  "Floor",   "Ceil",
      "Round", "Sign", "LeakyRelu", "Elu",      "Selu",     "HardSigmoid", "Identity"};
  static const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
  const std::string& op = n.op_type();
  if (op == "Constant") return true;
  if (kUnary.count(op)) return n.num_inputs() == 1 && is_float_tensor(n.input(0));
  if (kBinary.count(op))
    return n.num_inputs() == 2 && is_float_tensor(n.input(0)) && is_float_tensor(n.input(1)) &&
           n.input(0)->type().elem == n.input(1)->type().elem && broadcasts(n.input(0), n.input(1));
  if (op == "Cast") {
    const ir::Value* x = n.input(0);
    const int64_t to = n.attr_int("to", 0);
    const DType s = elem_type(x);
    // TensorProto codes: 1 float .. 16 bfloat16, 8 string (never), 9 bool.
    return x && s != DType::kUndefined && s != DType::kString && to >= 1 && to <= 16 && to != 8;
  }
  return false;
}

// Graph outputs of the graphs nested in g that are `from` become `to` (node inputs follow replace_all_uses).
void replace_nested_outputs(const ir::Graph& g, const ir::Value* from, ir::Value* to) {
  for (const auto& n : g.nodes())
    if (!n->removed())
      for (ir::Graph* sg : n->subgraphs()) {
        for (size_t i = 0; i < sg->outputs().size(); ++i)
          if (sg->outputs()[i] == from) sg->set_output(i, to);
        replace_nested_outputs(*sg, from, to);
      }
}

void collect_names(const ir::Graph& g, std::unordered_set<std::string>& names) {
  for (const auto& v : g.values()) names.insert(v->name());
  for (const auto& n : g.nodes())
    if (!n->removed())
      for (const ir::Graph* sg : n->subgraphs()) collect_names(*sg, names);
}

class LoopInvariantHoistingOptimizations final : public Pass {
 public:
  const char* name() const override { return "LoopInvariantHoistingOptimizations"; }
  PassCategory category() const override { return PassCategory::kLayout; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    std::vector<ir::Node*> loops;
    for (const auto& n : g.nodes())
      if (!n->removed() && n->op_type() == "Loop" && n->domain().empty() && n->attr("body") && n->attr("body")->g)
        loops.push_back(n.get());
    int count = 0;
    for (ir::Node* loop : loops) {
      SDX_ASSIGN_OR_RETURN(int n, hoist(g, *loop, ctx), "hoisting out of " + loop->describe());
      count += n;
    }
    return count;
  }

 private:
  static Result<int> hoist(ir::Graph& g, ir::Node& loop, PassContext& ctx) {
    ir::Graph& body = *loop.attr("body")->g;
    const bool once = runs_at_least_once(loop);
    // Invariant nodes, in body order (topological).
    std::unordered_set<const ir::Value*> invariant_values;
    std::vector<ir::Node*> invariant;
    for (const auto& np : body.nodes()) {
      ir::Node* n = np.get();
      if (n->removed() || !known_domain(n->domain()) || is_random(n->op_type()) || !n->subgraphs().empty()) continue;
      if (n->num_inputs() == 0 && n->op_type() != "Constant") continue;
      bool ok = once || cannot_fail(*n);
      for (const ir::Value* v : n->inputs()) {
        if (!ok) break;
        if (!v) continue;
        if (v->owner() != &body) continue;  // outer scope
        if (v->is_initializer() && !v->is_graph_input()) continue;
        ok = invariant_values.count(v) > 0;
      }
      for (const ir::Value* v : n->outputs())
        if (v && v->type().kind != ir::TypeInfo::Kind::kTensor && v->type().kind != ir::TypeInfo::Kind::kUnknown)
          ok = false;  // sequences, optionals: kept where they are
      if (!ok) continue;
      invariant.push_back(n);
      for (const ir::Value* v : n->outputs())
        if (v) invariant_values.insert(v);
    }
    // Constant and Identity nodes compute nothing: they move only when a moved node reads them (so the
    // Identity this pass leaves for a hoisted body output does not move again on the next round). In
    // reverse order, so that readers are decided first.
    auto trivial = [](const ir::Node* n) { return n->op_type() == "Constant" || n->op_type() == "Identity"; };
    std::unordered_set<const ir::Node*> moved;
    for (auto it = invariant.rbegin(); it != invariant.rend(); ++it) {
      ir::Node* n = *it;
      bool move = !trivial(n);
      for (const ir::Value* v : n->outputs())
        for (const ir::Node* u : v ? v->users() : std::vector<ir::Node*>{})
          if (moved.count(u)) move = true;
      if (move) moved.insert(n);
    }
    bool any = false;
    for (const ir::Node* n : moved) any = any || !trivial(n);
    if (!any) return 0;

    const ir::Graph* root = &g;
    while (root->parent()) root = root->parent();
    std::unordered_set<std::string> names;
    collect_names(*root, names);
    auto fresh = [&](const std::string& base) {
      std::string name = base;
      for (int k = 1; names.count(name); ++k) name = base + "_" + std::to_string(k);
      names.insert(name);
      return name;
    };

    std::unordered_map<const ir::Value*, ir::Value*> map;  // body value -> its outer copy
    auto outer = [&](ir::Value* v) -> ir::Value* {
      if (!v || v->owner() != &body) return v;
      auto it = map.find(v);
      if (it != map.end()) return it->second;
      ir::Value* c = g.add_initializer(fresh(v->name() + "_hoisted"), v->initializer());  // a body initializer
      map[v] = c;
      return c;
    };
    int count = 0;
    for (ir::Node* n : invariant) {
      if (!moved.count(n)) continue;
      std::vector<ir::Value*> inputs;
      for (ir::Value* v : n->inputs()) inputs.push_back(outer(v));
      std::vector<std::string> outputs;
      for (const ir::Value* v : n->outputs()) outputs.push_back(v ? fresh(v->name() + "_hoisted") : "");
      ir::Node* c = g.add_node(n->op_type(), n->domain(), fresh(n->name() + "_hoisted"), inputs, outputs);
      names.insert(c->name());
      c->set_opset(n->opset());
      for (const ir::Attribute& a : n->attributes()) c->add_attribute(a);
      g.move_node_before(c, &loop);
      for (int i = 0; i < n->num_outputs(); ++i)
        if (ir::Value* v = n->output(i)) {
          c->output(i)->mutable_type() = v->type();
          map[v] = c->output(i);
        }
      if (!trivial(n)) {
        ++count;
        ctx.applied(loop, n->describe() + " -> hoisted out of the Loop body");
      }
    }
    // The body reads the outer copies; what the body outputs stays a body value (an Identity of the copy).
    for (ir::Node* n : invariant) {
      if (!moved.count(n)) continue;
      const std::vector<ir::Value*> outs = n->outputs();
      body.remove_node(n);
      for (ir::Value* v : outs) {
        if (!v) continue;
        ir::Value* c = map.at(v);
        body.replace_all_uses(v, c);
        replace_nested_outputs(body, v, c);
        if (body.is_output(v)) {
          ir::Node* id = body.add_node_with_outputs("Identity", "", fresh(v->name() + "_of_hoisted"), {c}, {v});
          id->set_opset(n->opset());
        }
      }
    }
    SDX_RETURN_IF_ERROR(body.sort_topologically(), "");
    body.collect_garbage();
    return count;
  }
};

const PassRegistrar kRegistrar("hoist_loop_invariants",
                               [] { return std::make_unique<LoopInvariantHoistingOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
