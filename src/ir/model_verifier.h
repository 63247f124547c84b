// The verifier's gate: runs once on a model, before type inference and before any pass, and rejects
// what the ONNX IR spec forbids and a later stage would trip over: an opset outside what sdx knows,
// a graph with no outputs, an operator used in an opset older than the one that introduced it, and
// nodes that break their operator's signature (a required input given as "", a sequence where a
// tensor belongs, a missing required attribute; see ir/onnx_signature.h). The IR version is checked
// where a ModelProto is read (frontend/onnx): a model built in memory has none. Every rejection is
// InvalidGraph naming the graph, the node, the input and the rule. Passes may assume a model that
// passed it.
//
//   SDX_RETURN_IF_ERROR(ir::verify_model(model), "verifier");
#pragma once

#include "core/status.h"
#include "ir/graph.h"

namespace sdx::ir {

Status verify_model(const Model& model);

}  // namespace sdx::ir
