// TensorProto / SequenceProto / OptionalProto -> sdx values.
//
// Handles every initializer form: typed fields (float_data, int32_data, ...),
// raw_data (little-endian) and external data (confined to base_dir). Every
// byte length is checked against dims x element size.
//
//   SDX_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(proto, model_dir), "initializer 'w'");
#pragma once

#include <string>

#include "core/datum.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sdx_onnx {
class TensorProto;
}

namespace sdx::onnx {

Result<Tensor> tensor_from_proto(const sdx_onnx::TensorProto& proto, const std::string& base_dir);

// Parse serialized protos (as stored in the ONNX test-data .pb files).
Result<Tensor> parse_tensor_proto(const std::string& bytes, const std::string& base_dir = "");
Result<Datum> parse_sequence_proto(const std::string& bytes);
Result<Datum> parse_optional_proto(const std::string& bytes);

}  // namespace sdx::onnx
