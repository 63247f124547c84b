// What a caller changes in an ONNX model as it loads: onnxruntime's free dimension overrides and
// initializers supplied by name (SessionOptions.add_initializer / add_external_initializers). External
// data files supplied from memory travel in ExternalData::files (tensor_proto.h).
//
//   onnx::ModelEdits edits;
//   edits.free_dims.push_back({false, "batch", 1});               // dim_param "batch" -> 1
//   edits.initializers.emplace("W", tensor);                       // replaces initializer W
//   SDX_ASSIGN_OR_RETURN(ir::Model m, onnx::load_model_bytes(bytes, external, &edits), "");
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace sdx_onnx {
class ModelProto;
}

namespace sdx::onnx {

struct ModelEdits {
  struct FreeDim {
    bool by_denotation = false;  // match TensorShapeProto.Dimension.denotation, else dim_param
    std::string key;
    int64_t value = 0;
  };
  std::vector<FreeDim> free_dims;
  // Initializers of the main graph replaced by name: same element type and shape as the model's (whose
  // own data, even external data nobody can read, is then never read). A name the graph lacks is an error.
  std::map<std::string, Tensor> initializers;

  bool empty() const { return free_dims.empty() && initializers.empty(); }
};

// Fixes the free dimensions of every graph input, output and value_info of the main graph. An override
// that matches no dimension changes nothing (as in onnxruntime, where one set of overrides serves many
// models); a negative value is an error naming it.
Status apply_free_dims(sdx_onnx::ModelProto& mp, const std::vector<ModelEdits::FreeDim>& dims);

}  // namespace sdx::onnx
