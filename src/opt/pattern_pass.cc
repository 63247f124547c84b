#include "opt/pattern_pass.h"

#include "ir/onnx_signature.h"

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
#ifndef NDEBUG
    // Rules may assume a verified graph (ir/model_verifier.h): no required input omitted, kinds as the
    // signature says. They still test each producer they follow for null.
    if (const ir::OnnxSignature* sig = ir::find_onnx_signature(n->op_type(), n->domain(), n->opset()))
      SDX_ASSERT(ir::check_onnx_signature(*n, *sig).is_ok());
#endif
    for (size_t r : it->second) {
      if (n->removed()) break;
      rules_[r].apply(graph, *n, ctx);
    }
  }
  return ctx.count() - before;
}

}  // namespace sdx::opt
