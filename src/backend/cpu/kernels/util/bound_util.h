// Helpers for CPU kernels' prepare() (the bound form replay calls, see backend/kernel.h).
//
//   Result<std::unique_ptr<BoundKernel>> prepare(const PrepareContext& ctx) const override {
//     const Tensor& x = ctx.input(0);
//     if (!output_matches(ctx, 0, x.dtype(), x.shape())) return no_bound_form();
//     const float* px = x.data<float>();
//     float* py = ctx.output(0).data<float>();
//     ScratchBuffer<double> tmp(n);                  // allocated once, here
//     return backend::bind_call([=, tmp = std::move(tmp)] { ...; return Status::ok(); });
//   }
//
// A bound call owns its scratch memory, so one bound call must not run on two threads
// at once (it could not anyway: it writes one fixed output buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "backend/kernel.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "core/tensor_values.h"

namespace sdx::cpu {

using BoundResult = Result<std::unique_ptr<backend::BoundKernel>>;

// "No bound form for this case": replay falls back to run().
inline std::unique_ptr<backend::BoundKernel> no_bound_form() { return nullptr; }

// Input i when the node has it (an optional input given), else null; ctx: a PrepareContext or a
// KernelContext.
template <typename Ctx>
const Tensor* optional_input(const Ctx& ctx, int i) {
  return ctx.num_inputs() > i && ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

// True when output i is wanted and its frozen buffer has exactly this element type and shape.
inline bool output_matches(const backend::PrepareContext& ctx, int i, DType dtype, const Shape& shape) {
  if (i >= ctx.num_outputs() || !ctx.wants_output(i)) return false;
  const Tensor& t = ctx.output(i);
  return t.defined() && t.dtype() == dtype && t.shape() == shape;
}

// Same, for an optional output: true when it is not wanted or when it matches.
inline bool optional_output_matches(const backend::PrepareContext& ctx, int i, DType dtype, const Shape& shape) {
  if (i >= ctx.num_outputs() || !ctx.wants_output(i)) return true;
  return output_matches(ctx, i, dtype, shape);
}

// Scratch memory a bound call allocates once in prepare() and reuses on every call.
// Move-only; data() is writable from the (const) bound call.
template <typename T>
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  explicit ScratchBuffer(size_t n) : data_(n ? std::make_unique<T[]>(n) : nullptr), size_(n) {}
  T* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<T[]> data_;
  size_t size_ = 0;
};

// n values of p in their compute type (compute_t: float for 16-bit floats): p itself when T is its
// compute type, else widened into `copy` (n values, a ScratchBuffer of a bound call).
template <typename T>
const compute_t<T>* as_compute(const T* p, int64_t n, compute_t<T>* copy) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    (void)n;
    (void)copy;
    return p;
  } else {
    for (int64_t i = 0; i < n; ++i) copy[i] = to_f32(p[i]);
    return copy;
  }
}

}  // namespace sdx::cpu
