#include "ir/type_inference.h"

#include "ir/op_schema.h"

namespace sdx::ir {

Status infer_types(Graph& graph) {
  for (const auto& n : graph.nodes()) {
    for (Graph* sg : n->subgraphs()) SDX_RETURN_IF_ERROR(infer_types(*sg), n->describe());
    bool missing = false;
    for (Value* v : n->outputs()) missing |= v && v->type().kind == TypeInfo::Kind::kUnknown;
    if (!missing) continue;
    const OpSchema* s = OpSchemaRegistry::get().find(n->op_type(), n->domain());
    if (s && s->inference()) SDX_RETURN_IF_ERROR(s->inference()(*n), n->describe());
  }
  return Status::ok();
}

}  // namespace sdx::ir
