#include "frontend/onnx/tensor_proto.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "frontend/onnx/external_data.h"
#include "sdx_onnx.pb.h"
#include "sdx_onnx_data.pb.h"

namespace sdx::onnx {
namespace {

Status check_count(const std::string& name, int64_t have, int64_t want, const char* field) {
  if (have != want)
    return data_loss("tensor '" + name + "': " + field + " holds " + std::to_string(have) + " values but dims need " +
                     std::to_string(want));
  return Status::ok();
}

template <typename Src, typename Dst>
void copy_cast(const Src& src, Dst* dst) {
  for (int i = 0; i < src.size(); ++i) dst[i] = static_cast<Dst>(src.Get(i));
}

// A byte range of the in-memory blob, borrowed: the tensor keeps the blob's owner alive. A range that is
// not aligned for the element type is copied instead.
Result<Tensor> borrow_from_blob(const std::string& name, DType dtype, Shape shape, const ExternalData& external,
                                int64_t offset, size_t bytes) {
  if (external.blob.data() == nullptr)
    return invalid_argument("tensor '" + name + "': external data location '" + std::string(kBlobLocation) +
                            "' is only valid inside an sdx bundle");
  const size_t size = external.blob.size();
  if (offset < 0 || static_cast<uint64_t>(offset) > size || bytes > size - static_cast<size_t>(offset))
    return data_loss("tensor '" + name + "': bytes [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                     ") lie outside the bundle's weights section (" + std::to_string(size) + " bytes)");
  const char* p = external.blob.data() + offset;
  const size_t align = std::max<size_t>(1, dtype_storage_bytes(dtype, 1));
  if (reinterpret_cast<uintptr_t>(p) % align == 0 && bytes > 0)
    return Tensor::borrow(dtype, std::move(shape), const_cast<char*>(p), external.blob_owner);
  SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, std::move(shape)), "tensor '" + name + "'");
  if (bytes) std::memcpy(t.raw_data(), p, bytes);
  return t;
}

}  // namespace

Result<Tensor> tensor_from_proto(const sdx_onnx::TensorProto& proto, const std::string& base_dir) {
  return tensor_from_proto(proto, ExternalData{base_dir, {}, nullptr});
}

Result<Tensor> tensor_from_proto(const sdx_onnx::TensorProto& proto, const ExternalData& external) {
  const std::string& base_dir = external.base_dir;
  const std::string& name = proto.name();
  auto dt = dtype_from_onnx(proto.data_type());
  if (!dt) return invalid_argument("tensor '" + name + "' has unknown element type " + std::to_string(proto.data_type()));
  DType dtype = *dt;
  if (dtype == DType::kComplex64 || dtype == DType::kComplex128)
    return unimplemented("tensor '" + name + "': complex element types are not supported");
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  SDX_ASSIGN_OR_RETURN(Shape shape, Shape::make(dims), "tensor '" + name + "'");
  if (proto.has_segment()) return unimplemented("tensor '" + name + "': segmented tensors are not supported");
  const int64_t n = shape.numel();
  const size_t want_bytes = dtype_storage_bytes(dtype, n);

  if (proto.data_location() == sdx_onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    bool seen_location = false, seen_offset = false, seen_length = false;
    for (const auto& kv : proto.external_data()) {
      const std::string& key = kv.key();
      bool* seen = key == "location" ? &seen_location : key == "offset" ? &seen_offset : key == "length" ? &seen_length : nullptr;
      if (!seen) continue;  // "checksum" and keys of later IR versions
      if (*seen) return invalid_argument("tensor '" + name + "': external data field '" + key + "' is given twice");
      *seen = true;
      if (key == "location") {
        location = kv.value();
      } else {
        SDX_ASSIGN_OR_RETURN(int64_t v, parse_external_data_number(kv.value()),
                             "tensor '" + name + "': external data field '" + key + "'");
        (key == "offset" ? offset : length) = v;
      }
    }
    if (dtype == DType::kString) return invalid_argument("tensor '" + name + "': string tensors cannot use external data");
    if (length >= 0 && static_cast<size_t>(length) != want_bytes)
      return data_loss("tensor '" + name + "': external data length " + std::to_string(length) + " but dims " +
                       shape.to_string() + " of " + dtype_name(dtype) + " need " + std::to_string(want_bytes) + " bytes");
    if (location == kBlobLocation) return borrow_from_blob(name, dtype, std::move(shape), external, offset, want_bytes);
    if (external.files) {
      if (auto f = external.files->find(location); f != external.files->end()) {
        const std::string_view file = f->second;
        if (offset < 0 || static_cast<uint64_t>(offset) > file.size() || file.size() - static_cast<size_t>(offset) < want_bytes)
          return data_loss("tensor '" + name + "': external data at offset " + std::to_string(offset) + " of " +
                           std::to_string(want_bytes) + " bytes lies outside the in-memory file '" + location + "' (" +
                           std::to_string(file.size()) + " bytes)");
        SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape), "tensor '" + name + "'");
        if (want_bytes) std::memcpy(t.raw_data(), file.data() + offset, want_bytes);
        return t;
      }
    }
    SDX_ASSIGN_OR_RETURN(std::string bytes, read_external_data(base_dir, location, offset,
                                                               length >= 0 ? length : static_cast<int64_t>(want_bytes)),
                         "tensor '" + name + "'");
    SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape), "tensor '" + name + "'");
    std::memcpy(t.raw_data(), bytes.data(), want_bytes);
    return t;
  }

  // Every length is checked against the dims before anything is allocated, so a
  // hostile header cannot make us allocate memory its data does not back.
  if (dtype == DType::kString) {
    SDX_RETURN_IF_ERROR(check_count(name, proto.string_data_size(), n, "string_data"), "");
    SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape), "tensor '" + name + "'");
    for (int64_t i = 0; i < n; ++i) t.data<std::string>()[i] = proto.string_data(static_cast<int>(i));
    return t;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != want_bytes)
      return data_loss("tensor '" + name + "': raw_data has " + std::to_string(proto.raw_data().size()) +
                       " bytes but dims " + shape.to_string() + " of " + dtype_name(dtype) + " need " +
                       std::to_string(want_bytes));
    SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape), "tensor '" + name + "'");
    if (want_bytes) std::memcpy(t.raw_data(), proto.raw_data().data(), want_bytes);
    return t;
  }
  // Typed fields: which one holds this type, and how many entries it must have.
  int64_t have = 0, want = n;
  const char* field = "int32_data";
  switch (dtype) {
    case DType::kFloat32: have = proto.float_data_size(); field = "float_data"; break;
    case DType::kFloat64: have = proto.double_data_size(); field = "double_data"; break;
    case DType::kInt64: have = proto.int64_data_size(); field = "int64_data"; break;
    case DType::kUint32: case DType::kUint64: have = proto.uint64_data_size(); field = "uint64_data"; break;
    case DType::kInt4: case DType::kUint4: case DType::kFloat4E2M1: case DType::kInt2: case DType::kUint2:
      // Packed: each int32_data entry holds one byte of packed storage.
      have = proto.int32_data_size();
      want = static_cast<int64_t>(want_bytes);
      field = "int32_data (packed)";
      break;
    default: have = proto.int32_data_size(); break;
  }
  SDX_RETURN_IF_ERROR(check_count(name, have, want, field), "");
  SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape, cpu_allocator(), true), "tensor '" + name + "'");
  switch (dtype) {
    case DType::kFloat32: copy_cast(proto.float_data(), t.data<float>()); break;
    case DType::kFloat64: copy_cast(proto.double_data(), t.data<double>()); break;
    case DType::kInt64: copy_cast(proto.int64_data(), t.data<int64_t>()); break;
    case DType::kUint32: copy_cast(proto.uint64_data(), t.data<uint32_t>()); break;
    case DType::kUint64: copy_cast(proto.uint64_data(), t.data<uint64_t>()); break;
    case DType::kInt32: copy_cast(proto.int32_data(), t.data<int32_t>()); break;
    case DType::kInt16: case DType::kUint16: case DType::kFloat16: case DType::kBFloat16:
      copy_cast(proto.int32_data(), t.data<uint16_t>());
      break;
    default:  // 8-bit and packed types: one byte per int32_data entry
      copy_cast(proto.int32_data(), t.data<uint8_t>());
      break;
  }
  return t;
}

Result<Tensor> parse_tensor_proto(const std::string& bytes, const std::string& base_dir) {
  sdx_onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return data_loss("not a valid TensorProto");
  return tensor_from_proto(proto, base_dir);
}

Result<Datum> parse_sequence_proto(const std::string& bytes) {
  sdx_onnx::SequenceProto proto;
  if (!proto.ParseFromString(bytes)) return data_loss("not a valid SequenceProto");
  if (proto.elem_type() != sdx_onnx::SequenceProto::TENSOR && proto.elem_type() != sdx_onnx::SequenceProto::UNDEFINED)
    return unimplemented("sequence '" + proto.name() + "': only sequences of tensors are supported");
  std::vector<Tensor> items;
  DType elem = DType::kUndefined;
  for (const auto& tp : proto.tensor_values()) {
    SDX_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, ""), "sequence '" + proto.name() + "'");
    elem = t.dtype();
    items.push_back(std::move(t));
  }
  return Datum::sequence(std::move(items), elem);
}

Result<Datum> parse_optional_proto(const std::string& bytes) {
  sdx_onnx::OptionalProto proto;
  if (!proto.ParseFromString(bytes)) return data_loss("not a valid OptionalProto");
  switch (proto.elem_type()) {
    case sdx_onnx::OptionalProto::UNDEFINED: return Datum::none();
    case sdx_onnx::OptionalProto::TENSOR: {
      if (!proto.has_tensor_value()) return Datum::none();
      SDX_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(proto.tensor_value(), ""), "optional '" + proto.name() + "'");
      return Datum::tensor(std::move(t));
    }
    case sdx_onnx::OptionalProto::SEQUENCE: {
      if (!proto.has_sequence_value()) return Datum::none();
      return parse_sequence_proto(proto.sequence_value().SerializeAsString());
    }
    default:
      return unimplemented("optional '" + proto.name() + "': unsupported element kind");
  }
}

}  // namespace sdx::onnx
