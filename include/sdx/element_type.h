// ElementType: the element types of tensors, with the ONNX TensorProto code as each one's value (the same
// numbers as the C ABI's sdx_dtype_t). Generated from the one table of element types, dtype_defs.inc.
//
//   sdx::ElementType t = sdx::ElementType::kFloat32;
//   sdx::element_type_name(t);                      // "float" (onnxruntime's spelling: "tensor(float)")
//   sdx::ElementType u;  sdx::parse_element_type("int64", &u);
#pragma once

#include <cstdint>
#include <string_view>

namespace sdx {

enum class ElementType : uint8_t {
#define SDX_DTYPE(name, onnx, bits, str, is_float) name = onnx,
#include "sdx/dtype_defs.inc"
#undef SDX_DTYPE
};

// "float", "int64", "float16", ... ("undefined" for kUndefined).
const char* element_type_name(ElementType t);
// The inverse of element_type_name; false when `name` names no element type.
bool parse_element_type(std::string_view name, ElementType* out);
// Bytes of dense storage for `n` elements (sub-byte types packed, rounded up); 0 for strings.
size_t element_storage_bytes(ElementType t, int64_t n);

}  // namespace sdx
