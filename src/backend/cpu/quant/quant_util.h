// Element access and conversion for every numeric ONNX element type, shared by the
// cast and quantization kernels (Cast, CastLike, QuantizeLinear, DequantizeLinear, ...).
//
//   return visit_numeric_dtype(x.dtype(), [&](auto src) -> Status {
//     using S = typename decltype(src)::type;           // an Elem<DType::k...>
//     for (int64_t i = 0; i < n; ++i) Elem<DType::kFloat8E4M3FN>::store(out, i, S::load(in, i), opts);
//     return Status::ok();
//   }, "Cast");
//
// Elem<D>::load(data, i) returns the element as its canonical value: double for
// floating types, int64_t for signed integers and bool, uint64_t for unsigned
// integers. Elem<D>::store(data, i, v, opts) converts any canonical value the way
// numpy/ml_dtypes (onnx's reference) does: floats to integers truncate with x86
// overflow behaviour (out of range and NaN give the "integer indefinite" value, then
// wrap), integers wrap, floats round to nearest even. Packed (4-bit, 2-bit) outputs
// must be zeroed before storing (zero_packed_output()).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/quant/float8.h"
#include "core/dtype.h"
#include "core/float16.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sdx::cpu {

struct CastOptions {
  bool saturate = true;  // float8 targets: clamp out-of-range values instead of Inf/NaN
  E8M0Rounding round_mode = E8M0Rounding::kUp;
};

namespace elem_detail {

// x86 cvttsd2si semantics (what numpy's float->int casts do on x86-64).
inline int32_t trunc_i32(double d) {
  if (!(d > -2147483649.0 && d < 2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(d);
}
inline int64_t trunc_i64(double d) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(d);
}
inline uint64_t trunc_u64(double d) {
  if (d >= 9223372036854775808.0 && d < 18446744073709551616.0) return static_cast<uint64_t>(d);
  return static_cast<uint64_t>(trunc_i64(d));
}

// Integer of width <= 64 bits (or packed: the low bits are kept) from a canonical value.
template <typename T, typename V>
inline T int_from(V v) {
  if constexpr (std::is_same_v<V, double>) {
    if constexpr (std::is_same_v<T, uint64_t>) return trunc_u64(v);
    else if constexpr (sizeof(T) == 8 || std::is_same_v<T, uint32_t>) return static_cast<T>(trunc_i64(v));
    else return static_cast<T>(trunc_i32(v));
  } else {
    return static_cast<T>(v);
  }
}

template <typename V>
inline double to_double(V v) {
  return static_cast<double>(v);
}

template <typename T>
struct PlainInt {
  using type = PlainInt;
  using Load = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  static Load load(const void* p, int64_t i) { return static_cast<const T*>(p)[i]; }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    static_cast<T*>(p)[i] = int_from<T>(v);
  }
};

struct Bool {
  using type = Bool;
  using Load = int64_t;
  static Load load(const void* p, int64_t i) { return static_cast<const uint8_t*>(p)[i] != 0; }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    static_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;  // NaN != 0 is true, as in numpy
  }
};

struct F32 {
  using type = F32;
  using Load = double;
  static Load load(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    static_cast<float*>(p)[i] = static_cast<float>(v);
  }
};

struct F64 {
  using type = F64;
  using Load = double;
  static Load load(const void* p, int64_t i) { return static_cast<const double*>(p)[i]; }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    static_cast<double*>(p)[i] = static_cast<double>(v);
  }
};

struct F16 {
  using type = F16;
  using Load = double;
  static Load load(const void* p, int64_t i) { return static_cast<const Float16*>(p)[i].to_float(); }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    // Straight from the double, as numpy does (no double rounding through float).
    static_cast<Float16*>(p)[i] = Float16::from_bits(float_to_small_float(to_double(v), SmallFloat::kF16, false));
  }
};

struct BF16 {
  using type = BF16;
  using Load = double;
  static Load load(const void* p, int64_t i) { return static_cast<const BFloat16*>(p)[i].to_float(); }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    static_cast<BFloat16*>(p)[i] = BFloat16::from_float(static_cast<float>(v));  // ml_dtypes goes through float
  }
};

template <SmallFloat F>
struct Float8 {
  using type = Float8;
  using Load = double;
  static Load load(const void* p, int64_t i) { return small_float_table(F)[static_cast<const uint8_t*>(p)[i]]; }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions& o) {
    static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(float_to_small_float(to_double(v), F, o.saturate));
  }
};

struct E8M0 {
  using type = E8M0;
  using Load = double;
  static Load load(const void* p, int64_t i) { return e8m0_to_float(static_cast<const uint8_t*>(p)[i]); }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions& o) {
    static_cast<uint8_t*>(p)[i] = float_to_e8m0(static_cast<float>(v), o.saturate, o.round_mode);
  }
};

template <int Bits, bool Signed>
struct PackedInt {
  using type = PackedInt;
  using Load = std::conditional_t<Signed, int64_t, uint64_t>;
  static Load load(const void* p, int64_t i) {
    const auto* b = static_cast<const uint8_t*>(p);
    if constexpr (Signed) return packed_get_signed(b, i, Bits);
    else return static_cast<uint64_t>(packed_get_unsigned(b, i, Bits));
  }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    // ml_dtypes converts floats through int32 and keeps the low bits.
    packed_set(static_cast<uint8_t*>(p), i, Bits, static_cast<uint64_t>(int_from<int32_t>(v)));
  }
};

struct Float4 {
  using type = Float4;
  using Load = double;
  static Load load(const void* p, int64_t i) {
    return small_float_table(SmallFloat::kE2M1)[packed_get_bits(static_cast<const uint8_t*>(p), i, 4)];
  }
  template <typename V>
  static void store(void* p, int64_t i, V v, const CastOptions&) {
    packed_set(static_cast<uint8_t*>(p), i, 4, float_to_small_float(to_double(v), SmallFloat::kE2M1, true));
  }
};

}  // namespace elem_detail

template <DType D>
struct ElemFor;
#define SDX_ELEM_(d, ...) \
  template <>             \
  struct ElemFor<DType::d> { using type = elem_detail::__VA_ARGS__; };
SDX_ELEM_(kFloat32, F32)
SDX_ELEM_(kFloat64, F64)
SDX_ELEM_(kFloat16, F16)
SDX_ELEM_(kBFloat16, BF16)
SDX_ELEM_(kInt8, PlainInt<int8_t>)
SDX_ELEM_(kInt16, PlainInt<int16_t>)
SDX_ELEM_(kInt32, PlainInt<int32_t>)
SDX_ELEM_(kInt64, PlainInt<int64_t>)
SDX_ELEM_(kUint8, PlainInt<uint8_t>)
SDX_ELEM_(kUint16, PlainInt<uint16_t>)
SDX_ELEM_(kUint32, PlainInt<uint32_t>)
SDX_ELEM_(kUint64, PlainInt<uint64_t>)
SDX_ELEM_(kBool, Bool)
SDX_ELEM_(kFloat8E4M3FN, Float8<SmallFloat::kE4M3FN>)
SDX_ELEM_(kFloat8E4M3FNUZ, Float8<SmallFloat::kE4M3FNUZ>)
SDX_ELEM_(kFloat8E5M2, Float8<SmallFloat::kE5M2>)
SDX_ELEM_(kFloat8E5M2FNUZ, Float8<SmallFloat::kE5M2FNUZ>)
SDX_ELEM_(kFloat8E8M0, E8M0)
SDX_ELEM_(kInt4, PackedInt<4, true>)
SDX_ELEM_(kUint4, PackedInt<4, false>)
SDX_ELEM_(kInt2, PackedInt<2, true>)
SDX_ELEM_(kUint2, PackedInt<2, false>)
SDX_ELEM_(kFloat4E2M1, Float4)
#undef SDX_ELEM_

template <DType D>
using Elem = typename ElemFor<D>::type;

// Calls fn(Elem<D>{}) for the numeric (non-string, non-complex) element type t.
template <typename F>
Status visit_numeric_dtype(DType t, F&& fn, const std::string& op) {
  switch (t) {
#define SDX_VISIT_(d) \
  case DType::d: return fn(Elem<DType::d>{});
    SDX_VISIT_(kFloat32) SDX_VISIT_(kFloat64) SDX_VISIT_(kFloat16) SDX_VISIT_(kBFloat16)
    SDX_VISIT_(kInt8) SDX_VISIT_(kInt16) SDX_VISIT_(kInt32) SDX_VISIT_(kInt64)
    SDX_VISIT_(kUint8) SDX_VISIT_(kUint16) SDX_VISIT_(kUint32) SDX_VISIT_(kUint64) SDX_VISIT_(kBool)
    SDX_VISIT_(kFloat8E4M3FN) SDX_VISIT_(kFloat8E4M3FNUZ) SDX_VISIT_(kFloat8E5M2) SDX_VISIT_(kFloat8E5M2FNUZ)
    SDX_VISIT_(kFloat8E8M0) SDX_VISIT_(kInt4) SDX_VISIT_(kUint4) SDX_VISIT_(kInt2) SDX_VISIT_(kUint2)
    SDX_VISIT_(kFloat4E2M1)
#undef SDX_VISIT_
    default: return unimplemented(op + " does not support element type " + dtype_name(t));
  }
}

// Every element of a numeric tensor converted with static_cast to T (e.g. int32_t, double).
template <typename T>
std::vector<T> load_all_as(const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  (void)visit_numeric_dtype(
      t.dtype(),
      [&](auto e) -> Status {
        using E = decltype(e);
        for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = static_cast<T>(E::load(t.raw_data(), i));
        return Status::ok();
      },
      "load");
  return out;
}

inline bool dtype_is_packed(DType t) { return dtype_bits(t) > 0 && dtype_bits(t) < 8; }

// Packed outputs are written element by element into shared bytes: start from zeros.
inline void zero_packed_output(Tensor& t) {
  if (dtype_is_packed(t.dtype()) && t.nbytes() > 0) std::memset(t.raw_data(), 0, t.nbytes());
}

// Converts every element of `in` into `out` (same element count, any pair of element
// types including string; onnx Cast semantics).
Status cast_tensor(const Tensor& in, Tensor& out, const CastOptions& opts);

// String conversions (numpy str formatting and parsing), used by cast_tensor.
Status cast_to_string(const Tensor& in, Tensor& out);
Status cast_from_string(const Tensor& in, Tensor& out, const CastOptions& opts);

}  // namespace sdx::cpu
