#include "ir/type_inference.h"

#include "ir/op_schema.h"

#include <set>
#include <string>

namespace sdx::ir {

namespace {

bool needs_type(const Node& n) {
  for (Value* v : n.outputs())
    if (v && v->type().kind == TypeInfo::Kind::kUnknown) return true;
  return false;
}

// The dims the inputs of g (and of the graphs g is a body of) declare by name.
std::set<std::string> input_symbols(const Graph& g) {
  std::set<std::string> out;
  for (const Graph* at = &g; at; at = at->parent())
    for (const Value* in : at->inputs())
      if (in->type().shape)
        for (const Dim& d : *in->type().shape)
          if (!d.is_fixed() && !d.param.empty()) out.insert(d.param);
  return out;
}

// Only tensor outputs carry a shape; a declared shape (value_info, graph outputs) is kept, but for an
// intermediate value's unknown dims and placeholders (a symbol no input declares: "unk__4"), which the rule
// may know (set_output_dims).
bool needs_shape(const Node& n, const std::set<std::string>& symbols) {
  for (Value* v : n.outputs()) {
    if (!v || v->type().kind != TypeInfo::Kind::kTensor) continue;
    if (!v->type().shape) return true;
    for (const Dim& d : *v->type().shape)
      if (!d.is_fixed() && (d.param.empty() || !symbols.count(d.param))) return true;
  }
  return false;
}

}  // namespace

Status infer_types(Graph& graph) {
  const std::set<std::string> symbols = input_symbols(graph);
  for (const auto& n : graph.nodes()) {
    for (Graph* sg : n->subgraphs()) SDX_RETURN_IF_ERROR(infer_types(*sg), n->describe());
    const OpSchema* s = OpSchemaRegistry::get().find(n->op_type(), n->domain());
    if (!s) continue;
    if (s->inference() && needs_type(*n)) SDX_RETURN_IF_ERROR(s->inference()(*n), n->describe());
    if (s->shape_inference() && needs_shape(*n, symbols)) SDX_RETURN_IF_ERROR(s->shape_inference()(*n), n->describe());
  }
  return Status::ok();
}

}  // namespace sdx::ir
