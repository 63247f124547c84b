// Structural verifier for ir::Graph: SSA (one producer per value), topological
// order (every input is defined before use, in this graph or an enclosing one),
// defined graph outputs, schema arity, each ONNX node's signature (ir/onnx_signature.h), recursively
// into subgraphs. Runs after type inference and after passes (SDX_VERIFY_EACH_PASS=1); the gate that
// runs once on an imported model first is ir/model_verifier.h.
//
//   SDX_RETURN_IF_ERROR(ir::verify(graph), "after pass X");
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace sdx::ir {

Status verify(const Graph& graph);

}  // namespace sdx::ir
