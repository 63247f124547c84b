// Element-type dispatch: a function template run on the C++ type of a DType (kernels, the optimizer).
//
//   return dispatch<float, double, int32_t, int64_t>(x.dtype(), [&](auto tag) -> Status {
//     using T = typename decltype(tag)::type;
//     ...
//   }, "Relu");
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/dtype.h"
#include "core/float16.h"
#include "core/status.h"

namespace sdx {

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUint8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUint16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUint32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::kUint64;
  else if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, Float16>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, std::string>) return DType::kString;
  else static_assert(sizeof(T) == 0, "no DType for this C++ type");
}

// Calls fn(TypeTag<T>{}) for the T in Ts matching dtype, else returns Unimplemented
// naming the op and the dtype.
template <typename... Ts, typename F>
Status dispatch(DType dtype, F&& fn, const std::string& op) {
  Status result = unimplemented(op + " does not support element type " + dtype_name(dtype));
  bool matched = ((dtype == dtype_of<Ts>() ? (result = fn(TypeTag<Ts>{}), true) : false) || ...);
  (void)matched;
  return result;
}

// Common type lists, spelled out at call sites as dispatch<SDX_FLOAT_TYPES>(...).
#define SDX_FLOAT_TYPES float, double, ::sdx::Float16, ::sdx::BFloat16
#define SDX_INT_TYPES int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
#define SDX_NUMERIC_TYPES SDX_FLOAT_TYPES, SDX_INT_TYPES
#define SDX_ALL_TYPES SDX_NUMERIC_TYPES, bool, std::string

// Converts any arithmetic or 16-bit float to float/double and back.
template <typename T>
inline float to_f32(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return v.to_float();
  else return static_cast<float>(v);
}
template <typename T>
inline T from_f32(float v) {
  if constexpr (std::is_same_v<T, Float16>) return Float16::from_float(v);
  else if constexpr (std::is_same_v<T, BFloat16>) return BFloat16::from_float(v);
  else return static_cast<T>(v);
}
// Computation type: 16-bit floats compute in float, everything else in itself.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

}  // namespace sdx
