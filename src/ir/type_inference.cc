#include "ir/type_inference.h"

#include "ir/op_schema.h"

namespace sdx::ir {

namespace {

bool needs_type(const Node& n) {
  for (Value* v : n.outputs())
    if (v && v->type().kind == TypeInfo::Kind::kUnknown) return true;
  return false;
}

// Only tensor outputs carry a shape; a declared shape (value_info, graph outputs) is kept.
bool needs_shape(const Node& n) {
  for (Value* v : n.outputs())
    if (v && v->type().kind == TypeInfo::Kind::kTensor && !v->type().shape) return true;
  return false;
}

}  // namespace

Status infer_types(Graph& graph) {
  for (const auto& n : graph.nodes()) {
    for (Graph* sg : n->subgraphs()) SDX_RETURN_IF_ERROR(infer_types(*sg), n->describe());
    const OpSchema* s = OpSchemaRegistry::get().find(n->op_type(), n->domain());
    if (!s) continue;
    if (s->inference() && needs_type(*n)) SDX_RETURN_IF_ERROR(s->inference()(*n), n->describe());
    if (s->shape_inference() && needs_shape(*n)) SDX_RETURN_IF_ERROR(s->shape_inference()(*n), n->describe());
  }
  return Status::ok();
}

}  // namespace sdx::ir
