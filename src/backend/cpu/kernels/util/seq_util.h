// Helpers shared by the attention, recurrent and signal kernels (the "seq" family).
// Element conversions (load_as/store_as/round_as) and scalar/int reading are in
// tensor_values.h.
//
//   const std::vector<float> q = seq::widen<Float16, float>(ctx.input(0));
//   SDX_ASSIGN_OR_RETURN(Tensor pk, seq::output_or_scratch(ctx, 1, dtype, shape), "present_key");
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/type_dispatch.h"
#include "core/tensor_values.h"
#include "backend/kernel.h"
#include "core/tensor.h"

namespace sdx::cpu::seq {

// Copies a whole floating tensor of element type T into a vector of C.
template <typename T, typename C>
std::vector<C> widen(const Tensor& t) {
  std::vector<C> out(static_cast<size_t>(t.numel()));
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = load_as<C>(p[i]);
  return out;
}

// A floating tensor's elements as C: the tensor's own data when T is C (no copy), else a copy widened
// into `storage`, which must outlive the pointer.
template <typename T, typename C>
const C* widened(const Tensor& t, std::vector<C>& storage) {
  if constexpr (std::is_same_v<T, C>) {
    return t.data<C>();
  } else {
    storage = widen<T, C>(t);
    return storage.data();
  }
}

// Output i when the node has it, else scratch storage the kernel still needs (e.g.
// the present KV cache used as the attention's key buffer).
inline Result<Tensor> output_or_scratch(backend::KernelContext& ctx, int i, DType dtype, const Shape& shape) {
  if (i < ctx.num_outputs() && ctx.wants_output(i)) return ctx.allocate_output(i, dtype, shape);
  return Tensor::allocate(dtype, shape);
}

}  // namespace sdx::cpu::seq
