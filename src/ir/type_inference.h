// Fills in the TypeInfo of node outputs whose type the model did not declare,
// using each op's registered inference rule (recursively into subgraphs).
//
//   SDX_RETURN_IF_ERROR(ir::infer_types(graph), "type inference");
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace sdx::ir {

Status infer_types(Graph& graph);

}  // namespace sdx::ir
