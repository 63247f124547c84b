// The inner loop of pointwise_conv.h, one instantiation per simd level (internal to conv/):
// pointwise_kernels_impl.h is compiled by pointwise_kernels_{scalar,avx2,avx512}.cc with each level's
// flags, and pointwise_conv.cc calls the active level's.
#pragma once

#include <cstdint>

namespace sdx::cpu::pw {

struct Kernels {
  // y[m * ldy + j] = b[m] + sum over c ascending of w[m * C + c] * x[c * ldx + j], for m < M and j < n:
  // one multiply-add chain per element, from the bias (0 without one), so the result does not depend on
  // how the columns are split. x and y point at the first column; X is read in place (no packing).
  void (*cols)(const float* w, const float* b, int64_t M, int64_t C, const float* x, int64_t ldx, float* y,
               int64_t ldy, int64_t n);
};

const Kernels* scalar_kernels();
const Kernels* avx2_kernels();    // null when not compiled for x86-64
const Kernels* avx512_kernels();  // null when not compiled for x86-64

}  // namespace sdx::cpu::pw
