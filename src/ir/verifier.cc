#include "ir/verifier.h"

#include <unordered_set>

#include "ir/onnx_signature.h"
#include "ir/op_schema.h"

namespace sdx::ir {
namespace {

Status verify_graph(const Graph& g, std::unordered_set<const Value*>& visible) {
  const std::string where = "graph '" + g.name() + "'";
  std::unordered_set<const Value*> defined_here;
  auto define = [&](const Value* v) {
    visible.insert(v);
    defined_here.insert(v);
  };
  for (const Value* v : g.inputs()) define(v);
  for (const Value* v : g.initializers()) define(v);
  for (const auto& n : g.nodes()) {
    for (const Value* v : n->inputs()) {
      if (v && !visible.count(v))
        return invalid_argument(where + ": " + n->describe() + " reads '" + v->name() + "' before it is defined");
    }
    if (const OpSchema* s = OpSchemaRegistry::get().find(n->op_type(), n->domain())) {
      SDX_RETURN_IF_ERROR(s->check_arity(*n), where);
      SDX_RETURN_IF_ERROR(s->check_attributes(*n), where);
    }
    // Nodes the optimizer made keep their signature too (the gate, ir/model_verifier.h, checked the
    // imported ones and which opset each op exists in).
    if (n->opset() > 0)
      if (const OnnxSignature* sig = find_onnx_signature(n->op_type(), n->domain(), n->opset()))
        SDX_RETURN_IF_ERROR(check_onnx_signature(*n, *sig), where);
    for (const Graph* sg : n->subgraphs()) {
      if (sg->parent() != &g) return invalid_argument(where + ": subgraph '" + sg->name() + "' of " + n->describe() + " has the wrong parent");
      SDX_RETURN_IF_ERROR(verify_graph(*sg, visible), where + ", " + n->describe());
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      const Value* v = n->output(i);
      if (!v) continue;
      if (v->producer() != n.get() || v->producer_output() != i)
        return invalid_argument(where + ": output '" + v->name() + "' of " + n->describe() + " has an inconsistent producer");
      if (defined_here.count(v)) return invalid_argument(where + ": '" + v->name() + "' is defined twice");
      define(v);
    }
  }
  for (const Value* v : g.outputs())
    if (!visible.count(v)) return invalid_argument(where + ": output '" + v->name() + "' is never defined");
  for (const Value* v : defined_here) visible.erase(v);
  return Status::ok();
}

}  // namespace

Status verify(const Graph& graph) {
  std::unordered_set<const Value*> visible;
  return verify_graph(graph, visible);
}

}  // namespace sdx::ir
