// UnusedFunctionOptimizations (pass 1, dead code elimination): removes nodes none of whose outputs
// is a graph output or read by any node, repeatedly, so whole dead branches go in one sweep, then
// frees the initializers nothing reads any more (folded or replaced constants) unless callers may
// feed them (graph inputs).
#include "opt/pass.h"

namespace sdx::opt {
namespace {

class UnusedFunctionOptimizations final : public Pass {
 public:
  const char* name() const override { return "UnusedFunctionOptimizations"; }
  PassCategory category() const override { return PassCategory::kCleanup; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    const int before = ctx.count();
    // Last to first: removing a dead consumer can make its producers dead in the same sweep.
    std::vector<ir::Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (size_t i = order.size(); i-- > 0;) {
      ir::Node* n = order[i];
      bool live = false;
      for (const ir::Value* v : n->outputs())
        if (v && (!v->users().empty() || g.is_output(v))) live = true;
      if (live) continue;
      ctx.applied(*n, n->op_type() + " with unused outputs -> removed");
      g.remove_node(n);
    }
    for (const auto& v : g.values()) {
      if (!v->is_initializer() || v->is_graph_input() || !v->users().empty() || g.is_output(v.get())) continue;
      // Subgraph nodes reading it are listed among its users too, so nothing can still read it.
      ctx.applied_value(v->name(), "unused initializer '" + v->name() + "' (" + v->initializer().type_string() + ") -> freed");
      v->clear_initializer();
    }
    return ctx.count() - before;
  }
};

const PassRegistrar kRegistrar("eliminate_dead_nodes", [] { return std::make_unique<UnusedFunctionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
