#include "plan/plan.h"

#include <algorithm>

#include "ir/op_schema.h"

namespace sdx::plan {

const char* slot_kind_name(SlotKind k) {
  switch (k) {
    case SlotKind::kInput: return "input";
    case SlotKind::kInitializer: return "initializer";
    case SlotKind::kIntermediate: return "intermediate";
  }
  return "?";
}

int Plan::slot_of(const ir::Value* v) const {
  if (!v || v->owner() != graph_) return -1;
  return slot_by_value_[static_cast<size_t>(v->index())];
}

namespace {

// Values of `owner` read by a node: its inputs and what its subgraphs read from enclosing scopes.
void collect_reads(const ir::Node& node, const ir::Graph& owner, std::vector<const ir::Value*>& out) {
  for (const ir::Value* v : node.inputs())
    if (v && v->owner() == &owner) out.push_back(v);
  for (const ir::Graph* sg : node.subgraphs()) {
    for (const auto& n : sg->nodes()) collect_reads(*n, owner, out);
    for (const ir::Value* v : sg->outputs())
      if (v->owner() == &owner) out.push_back(v);
  }
}

}  // namespace

Result<Plan> compile(const ir::Graph& graph, const std::vector<ir::Value*>& requested_outputs,
                     const CompileOptions& options) {
  Plan p;
  p.graph_ = &graph;
  const auto& nodes = graph.nodes();
  // Dead-node filtering: walk backwards from the requested outputs.
  std::vector<bool> needed(graph.values().size(), false);
  for (const ir::Value* v : requested_outputs)
    if (v->owner() == &graph) needed[static_cast<size_t>(v->index())] = true;
  std::vector<bool> live(nodes.size(), false);
  std::vector<std::vector<const ir::Value*>> reads(nodes.size());
  for (size_t i = nodes.size(); i-- > 0;) {
    const ir::Node& n = *nodes[i];
    for (const ir::Value* out : n.outputs()) live[i] = live[i] || (out && needed[static_cast<size_t>(out->index())]);
    if (!live[i]) {
      ++p.dead_nodes_;
      continue;
    }
    collect_reads(n, graph, reads[i]);
    for (const ir::Value* v : reads[i]) needed[static_cast<size_t>(v->index())] = true;
  }

  p.slot_by_value_.assign(graph.values().size(), -1);
  auto add_slot = [&](const ir::Value* v, SlotKind kind) {
    int id = static_cast<int>(p.slots_.size());
    Slot s;
    s.value = v;
    s.kind = kind;
    p.slots_.push_back(s);
    p.slot_by_value_[static_cast<size_t>(v->index())] = id;
    return id;
  };
  // Every graph input gets a placeholder slot (feeds are validated against all of them).
  for (const ir::Value* v : graph.inputs())
    if (!v->is_initializer()) p.placeholders_.push_back(add_slot(v, SlotKind::kInput));
  for (const ir::Value* v : graph.initializers())
    if (needed[static_cast<size_t>(v->index())]) add_slot(v, v->is_graph_input() ? SlotKind::kInput : SlotKind::kInitializer);

  // Values fixed for a given input-shape signature: initializers that cannot be overridden,
  // Constants, Shape/Size of anything, and deterministic functions of such values. A
  // data-dependent op whose shape inputs are all fixed (Reshape to a constant shape) is no gap.
  std::vector<bool> fixed(graph.values().size(), false);
  for (const ir::Value* v : graph.initializers())
    if (!v->is_graph_input()) fixed[static_cast<size_t>(v->index())] = true;
  auto is_fixed = [&](const ir::Value* v) { return v && v->owner() == &graph && fixed[static_cast<size_t>(v->index())]; };

  // Execution order: the graph's (topological) order, or by wave then graph order.
  std::vector<size_t> order;
  std::vector<int> wave_of(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (live[i]) order.push_back(i);
  if (options.waves) {
    std::vector<int> value_wave(graph.values().size(), -1);  // wave of the step producing a value
    for (size_t i : order) {
      int w = 0;
      for (const ir::Value* v : reads[i]) w = std::max(w, value_wave[static_cast<size_t>(v->index())] + 1);
      wave_of[i] = w;
      for (const ir::Value* v : nodes[i]->outputs())
        if (v) value_wave[static_cast<size_t>(v->index())] = w;
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return wave_of[a] < wave_of[b]; });
  }

  for (size_t i : order) {
    const ir::Node& n = *nodes[i];
    const int step = static_cast<int>(p.steps_.size());
    Step st;
    st.node = &n;
    const ir::OpSchema* schema = ir::OpSchemaRegistry::get().find(n.op_type(), n.domain());
    st.gap = schema && !schema->capturable();
    if (st.gap && !schema->shape_inputs().empty()) {
      bool all_fixed = true;
      for (int k : schema->shape_inputs())
        if (k < n.num_inputs() && n.input(k) && !is_fixed(n.input(k))) all_fixed = false;
      st.gap = !all_fixed;
    }
    bool outputs_fixed = n.domain().empty() && (n.op_type() == "Shape" || n.op_type() == "Size" || n.op_type() == "Constant");
    if (!outputs_fixed && !st.gap && n.num_inputs() > 0 && n.subgraphs().empty()) {
      outputs_fixed = true;
      for (const ir::Value* v : n.inputs())
        if (v && !is_fixed(v)) outputs_fixed = false;
    }
    if (outputs_fixed)
      for (const ir::Value* v : n.outputs())
        if (v) fixed[static_cast<size_t>(v->index())] = true;
    for (const ir::Value* v : n.inputs()) {
      const int s = p.slot_of(v);
      if (v && v->owner() == &graph && s < 0)
        return internal_error(n.describe() + " reads '" + v->name() + "' before any step produces it");
      st.inputs.push_back(s);
    }
    for (const ir::Value* v : reads[i]) {
      const int s = p.slot_of(v);
      if (s >= 0) p.slots_[static_cast<size_t>(s)].last = step;
    }
    for (const ir::Value* v : n.outputs()) {
      if (!v) {
        st.outputs.push_back(-1);
        continue;
      }
      const int s = add_slot(v, SlotKind::kIntermediate);
      p.slots_[static_cast<size_t>(s)].producer_step = step;
      p.slots_[static_cast<size_t>(s)].first = step;
      p.slots_[static_cast<size_t>(s)].last = step;  // an output nobody reads dies where it is born
      st.outputs.push_back(s);
    }
    p.steps_.push_back(std::move(st));
  }
  const int last_step = std::max(0, static_cast<int>(p.steps_.size()) - 1);
  for (const ir::Value* v : requested_outputs) {
    const int s = p.slot_of(v);
    p.outputs_.push_back(s);  // -1: an outer-scope value passed through
    if (s >= 0) {
      p.slots_[static_cast<size_t>(s)].requested_output = true;
      p.slots_[static_cast<size_t>(s)].last = last_step;
    }
  }
  if (options.waves) {
    // Wave boundaries, then liveness widened to whole waves.
    std::vector<int> wave_end_of_step(p.steps_.size()), wave_start_of_step(p.steps_.size());
    for (size_t k = 0; k < order.size(); ++k)
      if (k == 0 || wave_of[order[k]] != wave_of[order[k - 1]]) p.wave_begin_.push_back(static_cast<int>(k));
    p.wave_begin_.push_back(static_cast<int>(order.size()));
    for (size_t w = 0; w + 1 < p.wave_begin_.size(); ++w)
      for (int k = p.wave_begin_[w]; k < p.wave_begin_[w + 1]; ++k) {
        wave_start_of_step[static_cast<size_t>(k)] = p.wave_begin_[w];
        wave_end_of_step[static_cast<size_t>(k)] = p.wave_begin_[w + 1] - 1;
      }
    for (Slot& slot : p.slots_) {
      if (slot.kind != SlotKind::kIntermediate || p.steps_.empty()) continue;
      slot.first = wave_start_of_step[static_cast<size_t>(slot.first)];
      slot.last = wave_end_of_step[static_cast<size_t>(slot.last)];
    }
  }
  p.release_at_step_.assign(p.steps_.size(), {});
  for (size_t s = 0; s < p.slots_.size(); ++s) {
    const Slot& slot = p.slots_[s];
    if (slot.kind == SlotKind::kIntermediate && !slot.requested_output)
      p.release_at_step_[static_cast<size_t>(slot.last)].push_back(static_cast<int>(s));
  }
  return p;
}

}  // namespace sdx::plan
