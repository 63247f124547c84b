// ir::Model -> ONNX ModelProto bytes: the optimized graph of a bundle (api/bundle.h), read back by
// onnx_loader.h.
//
//   SDX_ASSIGN_OR_RETURN(SavedModel saved, onnx::save_model(model), "");
//   ... saved.bytes (a ModelProto), saved.node_opsets ...
//
// ONNX gives each domain one opset per model, but the optimizer creates nodes at the opset their op
// needs (a Gelu at 20 in an opset-17 model). So the opset of every node travels beside the proto, in
// the order nodes are written (each graph's nodes in order, a node's subgraphs right after it, in
// attribute order), and apply_node_opsets puts them back after loading.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/graph.h"

namespace sdx::onnx {

struct SaveOptions {
  // Initializers of at least blob_min_bytes go to SavedModel::blob (each at a kBlobAlignment-aligned
  // offset) as external data at location kBlobLocation (tensor_proto.h), so that a reader can borrow
  // them in place; the rest, and every tensor attribute, stay raw_data in the proto.
  bool weights_in_blob = false;
  size_t blob_min_bytes = 256;
  // The location the blob's tensors name: kBlobLocation inside a bundle, a file name when the blob is written
  // beside the model as its external data.
  std::string blob_location = kBlobLocation;
  // Also record the node opsets in the model's metadata (kNodeOpsetsKey), so that the model file alone
  // loads back with them (load_model_bytes applies and removes the entry).
  bool node_opsets_in_metadata = false;
};
inline constexpr char kNodeOpsetsKey[] = "sdx.node_opsets";
inline constexpr size_t kBlobAlignment = 64;

struct SavedModel {
  std::string bytes;             // a serialized ModelProto
  std::vector<int> node_opsets;  // per node, in write order
  std::string blob;              // the initializers' bytes with SaveOptions::weights_in_blob
};

Result<SavedModel> save_model(const ir::Model& model, const SaveOptions& options = {});

// Sets the opset of every node of `model` from `opsets` (the same order); an error when the counts differ.
Status apply_node_opsets(ir::Model& model, const std::vector<int>& opsets);

}  // namespace sdx::onnx
