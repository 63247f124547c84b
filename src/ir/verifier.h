// Structural verifier for ir::Graph: SSA (one producer per value), topological
// order (every input is defined before use, in this graph or an enclosing one),
// defined graph outputs, schema arity, recursively into subgraphs.
//
//   SDX_RETURN_IF_ERROR(ir::verify(graph), "after pass X");
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace sdx::ir {

Status verify(const Graph& graph);

}  // namespace sdx::ir
