// CommonSubexpressionElimination (pass 14): nodes computing the same thing are merged.
//   n1 = Op(a, b, ...){attrs}, n2 = Op(a, b, ...){attrs}  -> n2's readers read n1's outputs, n2 goes
// Same op, domain and opset, the same input values in the same order (commuted operands are not
// matched), equal attributes (same_attributes) and the same present/omitted outputs. Visiting nodes
// in execution order merges whole duplicated chains in one sweep: once n2's readers read n1, their
// own duplicates match. Never merged: nodes with subgraphs (If/Loop/Scan), nondeterministic ops
// (Random*, Multinomial, Bernoulli, Dropout) and ops of domains other than ai.onnx, ai.onnx.ml and sdx
// (a custom op may keep state). Graph outputs keep their names: when the later node produces a graph
// output the earlier one is dropped instead; when both do, both stay. Identical cheap generators
// whose merged readers would be far apart stay separate (remat_policy.h): RematerializationOptimizations
// would split them again.
// Order: after ShapeFunctionOptimizations (1300) and RedundancyEliminationOptimizations (1200), whose
// merged values expose more identical nodes; consults remat_policy.h of pass 22.
#include <unordered_map>

#include "opt/pass.h"
#include "opt/remat_policy.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

bool mergeable(const ir::Node& n) {
  const std::string& d = n.domain();
  if (!d.empty() && d != "ai.onnx" && d != "ai.onnx.ml" && d != "sdx") return false;
  if (!n.subgraphs().empty() || n.num_outputs() == 0) return false;
  const std::string& op = n.op_type();
  return op.find("Random") == std::string::npos && op != "Multinomial" && op != "Bernoulli" && op != "Dropout";
}

bool produces_graph_output(const ir::Graph& g, const ir::Node& n) {
  for (const ir::Value* v : n.outputs())
    if (v && g.is_output(v)) return true;
  return false;
}

std::string signature(const ir::Node& n) {
  std::string key = n.domain() + ":" + n.op_type() + "/" + std::to_string(n.opset()) + "/";
  for (const ir::Value* v : n.inputs()) key += std::to_string(reinterpret_cast<uintptr_t>(v)) + ",";
  key += "/";
  for (const ir::Value* v : n.outputs()) key += v ? '1' : '0';
  return key;
}

bool same_computation(const ir::Node& a, const ir::Node& b) {
  if (a.op_type() != b.op_type() || a.domain() != b.domain() || a.opset() != b.opset() || a.inputs() != b.inputs() ||
      a.num_outputs() != b.num_outputs())
    return false;
  for (int i = 0; i < a.num_outputs(); ++i)
    if ((a.output(i) == nullptr) != (b.output(i) == nullptr)) return false;
  return same_attributes(a, b);
}

class CommonSubexpressionElimination final : public Pass {
 public:
  const char* name() const override { return "CommonSubexpressionElimination"; }
  PassCategory category() const override { return PassCategory::kCleanup; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    const int before = ctx.count();
    std::unordered_map<const ir::Node*, int> position;
    std::vector<ir::Node*> order;
    for (const auto& n : g.nodes()) {
      position[n.get()] = static_cast<int>(order.size());
      order.push_back(n.get());
    }
    std::unordered_map<std::string, std::vector<ir::Node*>> seen;
    for (ir::Node* n : order) {
      if (n->removed() || !mergeable(*n)) continue;
      std::vector<ir::Node*>& bucket = seen[signature(*n)];
      ir::Node* first = nullptr;
      size_t slot = 0;
      for (; slot < bucket.size(); ++slot)
        if (same_computation(*bucket[slot], *n)) {
          first = bucket[slot];
          break;
        }
      if (!first) {
        bucket.push_back(n);
        continue;
      }
      const bool first_out = produces_graph_output(g, *first), n_out = produces_graph_output(g, *n);
      if (first_out && n_out) continue;
      if (is_rematerializable(g, *first)) {
        std::vector<int> readers;
        for (const ir::Node* m : std::initializer_list<const ir::Node*>{first, n})
          for (const ir::Value* v : m->outputs())
            if (v)
              for (const ir::Node* u : v->users())
                if (position.count(u)) readers.push_back(position[u]);
        if (has_far_gap(readers)) continue;
      }
      ir::Node* keep = n_out ? n : first;
      ir::Node* drop = n_out ? first : n;
      ctx.applied(*drop, drop->op_type() + " identical to '" + keep->name() + "' -> merged");
      for (int i = 0; i < drop->num_outputs(); ++i)
        if (drop->output(i)) g.replace_all_uses(drop->output(i), keep->output(i));
      g.remove_node(drop);
      bucket[slot] = keep;
    }
    return ctx.count() - before;
  }
};

const PassRegistrar kRegistrar("merge_common_subexpressions", [] { return std::make_unique<CommonSubexpressionElimination>(); });

}  // namespace
}  // namespace sdx::opt
