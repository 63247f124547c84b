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
#include "ir/graph.h"

namespace sdx::onnx {

struct SavedModel {
  std::string bytes;             // a serialized ModelProto (initializers as raw_data; no external data)
  std::vector<int> node_opsets;  // per node, in write order
};

Result<SavedModel> save_model(const ir::Model& model);

// Sets the opset of every node of `model` from `opsets` (the same order); an error when the counts differ.
Status apply_node_opsets(ir::Model& model, const std::vector<int>& opsets);

}  // namespace sdx::onnx
