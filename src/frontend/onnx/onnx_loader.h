// ONNX model import: ModelProto bytes -> ir::Model.
//
//   SDX_ASSIGN_OR_RETURN(ir::Model m, onnx::load_model_file("model.onnx"), "");
//   SDX_ASSIGN_OR_RETURN(ir::Model m, onnx::load_model_bytes(bytes), "");
//
// Resolves opset imports onto every node, converts initializers (see
// tensor_proto.h), and imports If/Loop/Scan subgraphs with outer-scope names
// resolved against the enclosing graphs. Errors name the graph and node.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "frontend/onnx/model_edits.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/graph.h"

namespace sdx::onnx {

Result<ir::Model> load_model_file(const std::string& path);
// base_dir is where external data is looked up ("" forbids external data).
Result<ir::Model> load_model_bytes(const std::string& bytes, const std::string& base_dir = "");
// external: where external data comes from, files or an in-memory blob (tensor_proto.h); edits: what the
// caller changes as it loads (model_edits.h), or null.
Result<ir::Model> load_model_bytes(std::string_view bytes, const ExternalData& external,
                                   const ModelEdits* edits = nullptr);

}  // namespace sdx::onnx
