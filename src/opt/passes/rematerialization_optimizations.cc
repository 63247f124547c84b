// RematerializationOptimizations (pass 22): recomputes a cheap, large value next to its late readers
// instead of keeping it alive across the graph.
//   g = Gen(small inputs)          (Gen: ConstantOfShape, Expand, Range, Tile; see remat_policy.h)
//   ... early readers of g ...     a gap of more than kRematDistance nodes without a reader
//   ... late readers of g ...  ->  g' = Gen(same inputs) placed right before the first late reader,
//                                  which (and the rest of its group) reads g' instead of g
// The rule: readers of g sorted by execution position form groups wherever two neighbours are more
// than kRematDistance nodes apart; the first group keeps g, every later group gets its own copy (at
// most kMaxCopies; further groups share the last one). Only when g's inputs are constants, graph
// inputs or tiny (Shape outputs, scalars), so no other value lives longer; g's output is not a graph
// output and every reader is a node of the same graph (not a subgraph). The gain: g's buffer (at least
// kRematMinBytes) is free between the groups, for the memory planner to reuse. The cost: one more
// fill/broadcast per copy, the cheapest kind of kernel. Results are bit-identical (the same op on
// the same inputs).
// Order: after every fusion pass (positions are final) and before the backend pass (2400).
#include <algorithm>
#include <unordered_map>

#include "opt/pass.h"
#include "opt/remat_policy.h"

namespace sdx::opt {
namespace {

constexpr size_t kMaxCopies = 8;

class RematerializationOptimizations final : public Pass {
 public:
  const char* name() const override { return "RematerializationOptimizations"; }
  PassCategory category() const override { return PassCategory::kLayout; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    const int before = ctx.count();
    std::vector<ir::Node*> snapshot;
    for (const auto& n : g.nodes()) snapshot.push_back(n.get());
    std::unordered_map<const ir::Node*, int> position;
    auto number = [&] {
      int i = 0;
      for (const auto& n : g.nodes()) position[n.get()] = i++;
    };
    number();
    for (ir::Node* n : snapshot)
      if (!n->removed() && is_rematerializable(g, *n) && rematerialize(g, *n, position, ctx)) number();
    return ctx.count() - before;
  }

 private:
  // Positions are the current execution order (copies move nodes, so the caller renumbers after a change).
  static bool rematerialize(ir::Graph& g, ir::Node& gen, std::unordered_map<const ir::Node*, int>& position,
                            PassContext& ctx) {
    ir::Value* out = gen.output(0);
    if (g.is_output(out) || out->users().size() < 2) return false;
    std::vector<ir::Node*> readers;
    for (ir::Node* u : out->users()) {
      if (u->owner() != &g || !position.count(u)) return false;  // read inside a subgraph: keep it simple
      if (std::find(readers.begin(), readers.end(), u) == readers.end()) readers.push_back(u);
    }
    std::sort(readers.begin(), readers.end(),
              [&](const ir::Node* a, const ir::Node* b) { return position[a] < position[b]; });
    std::vector<std::vector<ir::Node*>> groups{{readers[0]}};
    for (size_t r = 1; r < readers.size(); ++r) {
      const bool far = position[readers[r]] - position[groups.back().back()] > kRematDistance;
      if (far && groups.size() <= kMaxCopies) groups.push_back({});
      groups.back().push_back(readers[r]);
    }
    if (groups.size() < 2) return false;
    ctx.applied(gen, gen.op_type() + " read " + std::to_string(readers.size()) + " times in " +
                         std::to_string(groups.size()) + " far-apart groups -> recomputed for each late group");
    for (size_t k = 1; k < groups.size(); ++k) {
      const std::string name = g.unique_name(gen.name().empty() ? gen.op_type() : gen.name() + "_remat");
      ir::Node* copy =
          g.add_node(gen.op_type(), gen.domain(), name, gen.inputs(), {g.unique_name(out->name() + "_remat")});
      copy->set_opset(gen.opset());
      for (const ir::Attribute& a : gen.attributes()) copy->add_attribute(a);
      copy->output(0)->mutable_type() = out->type();
      g.move_node_before(copy, groups[k].front());
      for (ir::Node* u : groups[k])
        for (int in = 0; in < u->num_inputs(); ++in)
          if (u->input(in) == out) g.set_input(u, in, copy->output(0));
    }
    return true;
  }
};

const PassRegistrar kRegistrar("rematerialize_broadcasts", [] { return std::make_unique<RematerializationOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
