// Helpers shared by the attention, recurrent and signal kernels (the "seq" family).
//
//   float s = round_as<Float16>(a * b);   // mimic an fp16 intermediate in float math
//   SDX_ASSIGN_OR_RETURN(std::vector<float> q, to_compute<float>(ctx.input(0)), "Q");
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/dispatch.h"
#include "backend/kernel.h"
#include "core/tensor.h"

namespace sdx::cpu::seq {

// Rounds a compute-type value through T, so kernels computing 16-bit types in float
// reproduce the reference's intermediate rounding where it matters for tolerance.
template <typename T, typename C>
inline C round_as(C v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return from_f32<T>(static_cast<float>(v)).to_float();
  else return v;
}

// Element i of a floating tensor of type T, widened to C.
template <typename T, typename C>
inline C load_as(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return static_cast<C>(p[i].to_float());
  else return static_cast<C>(p[i]);
}

template <typename T, typename C>
inline T store_as(C v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return from_f32<T>(static_cast<float>(v));
  else return static_cast<T>(v);
}

// Copies a whole floating tensor of element type T into a vector of C.
template <typename T, typename C>
std::vector<C> widen(const Tensor& t) {
  std::vector<C> out(static_cast<size_t>(t.numel()));
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = load_as<T, C>(p, i);
  return out;
}

// Output i when the node has it, else scratch storage the kernel still needs (e.g.
// the present KV cache used as the attention's key buffer).
inline Result<Tensor> output_or_scratch(backend::KernelContext& ctx, int i, DType dtype, const Shape& shape) {
  if (i < ctx.num_outputs() && ctx.wants_output(i)) return ctx.allocate_output(i, dtype, shape);
  return Tensor::allocate(dtype, shape);
}

// Reads an integer tensor (int32 or int64) as int64 values.
inline bool read_int_values(const Tensor& t, std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kInt64) {
    for (int64_t i = 0; i < t.numel(); ++i) (*out)[static_cast<size_t>(i)] = t.data<int64_t>()[i];
  } else if (t.dtype() == DType::kInt32) {
    for (int64_t i = 0; i < t.numel(); ++i) (*out)[static_cast<size_t>(i)] = t.data<int32_t>()[i];
  } else {
    return false;
  }
  return true;
}

// Reads a scalar (or one-element) numeric tensor as double.
inline bool read_scalar(const Tensor& t, double* out) {
  if (t.numel() != 1) return false;
  Status s = dispatch<SDX_NUMERIC_TYPES>(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    *out = static_cast<double>(to_f32(t.data<T>()[0]));
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int64_t>) *out = static_cast<double>(t.data<T>()[0]);
    return Status::ok();
  }, "scalar");
  return s.is_ok();
}

}  // namespace sdx::cpu::seq
