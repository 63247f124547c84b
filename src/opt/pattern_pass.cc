#include "opt/pattern_pass.h"

namespace sdx::opt {

void PatternPass::add_rule(RewriteRule rule) {
  for (const std::string& a : rule.anchors) {
    const std::string key = a.find(':') == std::string::npos ? ":" + a : a;
    by_anchor_[key].push_back(rules_.size());
  }
  rules_.push_back(std::move(rule));
}

Result<int> PatternPass::run(ir::Graph& graph, PassContext& ctx) {
  const int before = ctx.count();
  std::vector<ir::Node*> snapshot;
  for (const auto& n : graph.nodes()) snapshot.push_back(n.get());
  for (ir::Node* n : snapshot) {
    if (n->removed()) continue;
    auto it = by_anchor_.find(n->domain() + ":" + n->op_type());
    if (it == by_anchor_.end()) continue;
    for (size_t r : it->second) {
      if (n->removed()) break;
      rules_[r].apply(graph, *n, ctx);
    }
  }
  return ctx.count() - before;
}

}  // namespace sdx::opt
