// DType: the element types of ONNX tensors, generated from dtype_defs.inc.
//
//   DType t = dtype_from_onnx(1);            // kFloat32
//   size_t n = dtype_storage_bytes(t, 10);   // 40
//   dispatch_numeric(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sdx/element_type.h"

namespace sdx {

// The public element type (include/sdx/element_type.h), under the name the engine uses.
using DType = ElementType;

inline constexpr int kNumDTypes = 0
#define SDX_DTYPE(name, onnx, bits, str, is_float) +1
#include "sdx/dtype_defs.inc"
#undef SDX_DTYPE
    ;
static_assert(kNumDTypes == 27, "update dtype_defs.inc consumers");

// ONNX TensorProto.DataType code; the enum order equals the code.
inline int dtype_to_onnx(DType t) { return static_cast<int>(t); }
std::optional<DType> dtype_from_onnx(int code);
// "float", "int64", ... (onnxruntime spelling without "tensor(...)").
const char* dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// Bits per element in storage; 0 for strings and kUndefined.
int dtype_bits(DType t);
bool dtype_is_float(DType t);
bool dtype_is_signed_int(DType t);
bool dtype_is_unsigned_int(DType t);
inline bool dtype_is_int(DType t) { return dtype_is_signed_int(t) || dtype_is_unsigned_int(t); }
// True for 1-byte-aligned fixed-size types (everything except string and packed sub-byte types).
bool dtype_is_byte_addressable(DType t);
// Bytes of storage for n elements (packed types round up); strings return n * sizeof(std::string).
size_t dtype_storage_bytes(DType t, int64_t n);

}  // namespace sdx
