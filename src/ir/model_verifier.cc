#include "ir/model_verifier.h"

#include "ir/onnx_signature.h"

namespace sdx::ir {
namespace {

bool is_onnx_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml";
}

Status verify_graph_gate(const Graph& g, bool is_main, const OnnxLimits& limits) {
  const std::string where = std::string(is_main ? "graph" : "subgraph") + " '" + g.name() + "'";
  if (g.outputs().empty()) return invalid_graph(where + " has no outputs");
  for (const auto& n : g.nodes()) {
    if (is_onnx_domain(n->domain()) && is_onnx_op(n->op_type(), n->domain())) {
      // Opset 0: a node built in memory without one is held to the newest signature.
      const int opset = n->opset() > 0 ? n->opset() : (n->domain() == "ai.onnx.ml" ? limits.ml_opset : limits.opset);
      const OnnxSignature* sig = find_onnx_signature(n->op_type(), n->domain(), opset);
      if (!sig)
        return invalid_graph(where + ": " + n->describe() + ": " + n->op_type() + " is not part of " +
                             (n->domain().empty() ? std::string("ai.onnx") : n->domain()) + " opset " +
                             std::to_string(n->opset()) + "; it was added in opset " +
                             std::to_string(first_onnx_version(n->op_type(), n->domain())));
      SDX_RETURN_IF_ERROR(check_onnx_signature(*n, *sig), where);
    }
    for (const Graph* sg : n->subgraphs())
      SDX_RETURN_IF_ERROR(verify_graph_gate(*sg, false, limits), where + ", " + n->describe());
  }
  return Status::ok();
}

}  // namespace

Status verify_model(const Model& model) {
  // ir_version is checked where a ModelProto is read (frontend/onnx): a model built in memory has none.
  const OnnxLimits& limits = onnx_limits();
  for (const auto& [domain, version] : model.opsets) {
    const int newest = domain.empty() ? limits.opset : domain == "ai.onnx.ml" ? limits.ml_opset : 0;
    const std::string name = domain.empty() ? "ai.onnx" : domain;
    if (version < 1 || (newest > 0 && version > newest))
      return invalid_graph(
          "opset_import of domain '" + name + "' is version " + std::to_string(version) +
          (newest > 0 ? "; sdx knows versions 1 to " + std::to_string(newest) : "; versions start at 1"));
  }
  if (!model.graph) return invalid_graph("model has no graph");
  return verify_graph_gate(*model.graph, true, limits);
}

}  // namespace sdx::ir
