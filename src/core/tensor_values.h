// Reading small tensors' values and converting single elements, shared by every CPU kernel family and
// the optimizer (one copy instead of one per family header).
//
//   // Attribute-like inputs (axes, shapes, sizes, scales):
//   SDX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, read_int64s(ctx.input(1), "axes"), "");   // any integer dtype
//   SDX_ASSIGN_OR_RETURN(int64_t k, read_int64_scalar(ctx.input(1), "K", IntTypes::kInt32Or64), "");
//   SDX_ASSIGN_OR_RETURN(std::vector<double> s, read_doubles(ctx.input(2), "scales", RealTypes::kFloat), "");
//   SDX_ASSIGN_OR_RETURN(double v, read_double_scalar(ctx.input(2), "ratio"), "");           // any numeric dtype
//
//   // Element conversions that know about Float16/BFloat16 (which go through float):
//   double x = load_as<double>(p[i]);        // T -> A
//   q[i] = store_as<T>(x * 0.5);             // A -> T (16-bit floats round from float)
//   float s = round_as<Float16>(a * b);      // mimic a 16-bit intermediate in float math
//
// to_f32/from_f32 and compute_t (type_dispatch.h) remain the float-only primitives these
// build on.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/type_dispatch.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sdx {

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// ---- Element conversions -----------------------------------------------------------

// An element of type T as A (16-bit floats widen through float, everything else static_casts).
template <typename A, typename T>
inline A load_as(T v) {
  if constexpr (is_half_v<T>) return static_cast<A>(v.to_float());
  else return static_cast<A>(v);
}

// A value of type A stored as element type T (16-bit floats round from float).
template <typename T, typename A>
inline T store_as(A v) {
  if constexpr (is_half_v<T>) {
    return from_f32<T>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && std::is_floating_point_v<A>) {
    // Float -> integer without undefined behaviour: NaN gives 0, out-of-range values saturate
    // (e.g. ReduceLogSum of zeros in an integer type gives -inf).
    if (v != v) return T(0);
    if (v <= static_cast<A>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<A>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Rounds a compute-type value through T, so kernels computing 16-bit types in float
// reproduce the reference's intermediate rounding where it matters for tolerance.
template <typename T, typename C>
inline C round_as(C v) {
  if constexpr (is_half_v<T>) return from_f32<T>(static_cast<float>(v)).to_float();
  else return v;
}

// ---- Reading small tensors ---------------------------------------------------------

// Which integer element types read_int64s / read_int64_scalar accept.
enum class IntTypes {
  kAny,        // every integer dtype; fails "<what> must be an integer tensor, got <type>"
  kInt32Or64,  // int32 and int64 only; fails "<what> must be int32 or int64, got <type>"
};

// Values of an integer tensor as int64 (uint64 values above INT64_MAX are rejected).
inline Result<std::vector<int64_t>> read_int64s(const Tensor& t, const std::string& what, IntTypes accept = IntTypes::kAny) {
  if (accept == IntTypes::kInt32Or64 && t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return invalid_argument(what + " must be int32 or int64, got " + t.type_string());
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  Status st = dispatch<SDX_INT_TYPES>(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, uint64_t>) {
        if (p[i] > static_cast<uint64_t>(INT64_MAX)) return invalid_argument(what + " value too large");
      }
      out[i] = static_cast<int64_t>(p[i]);
    }
    return Status::ok();
  }, what);
  if (!st.is_ok()) return invalid_argument(what + " must be an integer tensor, got " + t.type_string());
  return out;
}

// The single value of a one-element integer tensor.
inline Result<int64_t> read_int64_scalar(const Tensor& t, const std::string& what, IntTypes accept = IntTypes::kAny) {
  if (t.numel() != 1) return invalid_argument(what + " must hold exactly one value, got " + t.type_string());
  SDX_ASSIGN_OR_RETURN(std::vector<int64_t> v, read_int64s(t, what, accept), "");
  return v[0];
}

// Which element types read_doubles / read_floats / read_double_scalar accept; others
// fail "<what> does not support element type <dtype>".
enum class RealTypes {
  kNumeric,  // float, double, float16, bfloat16 and every integer dtype
  kFloat,    // float, double, float16, bfloat16 only
  kNumericOrBool,  // kNumeric plus bool (false -> 0, true -> 1)
};

namespace values_detail {
template <typename V>
Result<std::vector<V>> read_values(const Tensor& t, const std::string& what, RealTypes accept) {
  std::vector<V> v(static_cast<size_t>(t.numel()));
  auto fill = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = load_as<V>(p[i]);
    return Status::ok();
  };
  Status s = accept == RealTypes::kFloat     ? dispatch<SDX_FLOAT_TYPES>(t.dtype(), fill, what)
             : accept == RealTypes::kNumeric ? dispatch<SDX_NUMERIC_TYPES>(t.dtype(), fill, what)
                                             : dispatch<SDX_NUMERIC_TYPES, bool>(t.dtype(), fill, what);
  if (!s.is_ok()) return s;
  return v;
}
}  // namespace values_detail

// Values of a numeric tensor as double (16-bit floats through float, integers static_cast).
inline Result<std::vector<double>> read_doubles(const Tensor& t, const std::string& what,
                                                RealTypes accept = RealTypes::kNumeric) {
  return values_detail::read_values<double>(t, what, accept);
}

// Values of a numeric tensor as float.
inline Result<std::vector<float>> read_floats(const Tensor& t, const std::string& what,
                                              RealTypes accept = RealTypes::kNumeric) {
  return values_detail::read_values<float>(t, what, accept);
}

// The single value of a one-element numeric tensor, as double.
inline Result<double> read_double_scalar(const Tensor& t, const std::string& what, RealTypes accept = RealTypes::kNumeric) {
  if (t.numel() != 1) return invalid_argument(what + " must hold exactly one value, got " + t.type_string());
  SDX_ASSIGN_OR_RETURN(std::vector<double> v, read_doubles(t, what, accept), "");
  return v[0];
}

// ---- Layout ------------------------------------------------------------------------

// Row-major strides of dims.
inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  return s;
}

}  // namespace sdx
