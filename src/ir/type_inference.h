// Fills in the TypeInfo of node outputs the model did not describe: first the
// element type (each op's .infer rule), then the static shape (its .infer_shape
// rule, see ir/shape_inference.h) for tensor outputs whose shape is unknown.
// Shapes follow from the graph's declared input shapes, fixed and symbolic dims
// alike; a declared shape is never replaced. Recurses into subgraphs. Fails only
// when fixed dims definitely contradict each other (Add of [3] and [4]), naming
// the node and the shapes.
//
//   SDX_RETURN_IF_ERROR(ir::infer_types(graph), "type inference");
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace sdx::ir {

Status infer_types(Graph& graph);

}  // namespace sdx::ir
