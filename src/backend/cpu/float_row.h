// Functors with a float row form, shared by the element-wise kernels (elementwise.h) and the
// fused ops' epilogues (activation.h).
//
// A functor that also has `void row(const float* x, float* y, int64_t n) const` computes whole
// float ranges on the vector kernels (simd/vector_ops.h). Its float operator() must then give
// the bits of the row form, which apply_row1 does:
//
//   struct TanhOp {
//     void row(const float* x, float* y, int64_t n) const { simd::tanh(x, y, n); }
//     template <typename C> C operator()(C x) const {
//       if constexpr (std::is_same_v<C, float>) return apply_row1(*this, x);
//       else return std::tanh(x);
//     }
//   };
#pragma once

#include <cstdint>

namespace sdx::cpu {

template <typename F>
concept HasFloatRow = requires(const F& f, const float* x, float* y, int64_t n) { f.row(x, y, n); };

// f(x) for one float through f.row, so it has the bits of a vector lane.
template <typename F>
inline float apply_row1(const F& f, float x) {
  float y;
  f.row(&x, &y, 1);
  return y;
}

}  // namespace sdx::cpu
