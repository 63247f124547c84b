// TensorProto / SequenceProto / OptionalProto -> sdx values.
//
// Handles every initializer form: typed fields (float_data, int32_data, ...),
// raw_data (little-endian) and external data (confined to base_dir). Every
// byte length is checked against dims x element size.
//
//   SDX_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(proto, model_dir), "initializer 'w'");
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/datum.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sdx_onnx {
class TensorProto;
}

namespace sdx::onnx {

// Where external data is read from: files in base_dir (confined to it; "" forbids files), and one block
// of memory that tensors borrow without a copy (a bundle's weights section, frontend/bundle): an
// initializer whose location is kBlobLocation names a byte range of `blob`, checked against its size.
// blob_owner keeps the block alive for as long as any tensor borrows from it.
inline constexpr char kBlobLocation[] = "sdx:blob";
struct ExternalData {
  std::string base_dir;
  std::string_view blob;
  std::shared_ptr<void> blob_owner;
  // External data files supplied from memory by location (onnxruntime's
  // add_external_initializers_from_files_in_memory): looked up before base_dir, copied out while loading.
  const std::map<std::string, std::string_view>* files = nullptr;
};

Result<Tensor> tensor_from_proto(const sdx_onnx::TensorProto& proto, const ExternalData& external);
Result<Tensor> tensor_from_proto(const sdx_onnx::TensorProto& proto, const std::string& base_dir);

// Parse serialized protos (as stored in the ONNX test-data .pb files).
Result<Tensor> parse_tensor_proto(const std::string& bytes, const std::string& base_dir = "");
Result<Datum> parse_sequence_proto(const std::string& bytes);
Result<Datum> parse_optional_proto(const std::string& bytes);

}  // namespace sdx::onnx
