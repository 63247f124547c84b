#include "frontend/onnx/model_edits.h"

#include "sdx_onnx.pb.h"

namespace sdx::onnx {

namespace {

void fix_dims(sdx_onnx::ValueInfoProto& vi, const std::vector<ModelEdits::FreeDim>& dims) {
  if (!vi.has_type() || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
  for (auto& d : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
    if (d.has_dim_value()) continue;
    for (const ModelEdits::FreeDim& f : dims) {
      const bool match = f.by_denotation ? d.denotation() == f.key : (d.has_dim_param() && d.dim_param() == f.key);
      if (!match) continue;
      d.set_dim_value(f.value);  // clears dim_param (one of); the denotation stays
      break;
    }
  }
}

}  // namespace

Status apply_free_dims(sdx_onnx::ModelProto& mp, const std::vector<ModelEdits::FreeDim>& dims) {
  for (const ModelEdits::FreeDim& f : dims)
    if (f.value < 0)
      return invalid_argument("free dimension override " + std::string(f.by_denotation ? "denotation '" : "'") + f.key +
                              "' = " + std::to_string(f.value) + ": a dimension cannot be negative");
  sdx_onnx::GraphProto& g = *mp.mutable_graph();
  for (auto& vi : *g.mutable_input()) fix_dims(vi, dims);
  for (auto& vi : *g.mutable_output()) fix_dims(vi, dims);
  for (auto& vi : *g.mutable_value_info()) fix_dims(vi, dims);
  return Status::ok();
}

}  // namespace sdx::onnx
