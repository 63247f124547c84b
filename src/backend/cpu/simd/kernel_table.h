// The table of vector kernels one instruction-set level provides (internal to simd/).
//
// Each level compiles simd/kernels_impl.h with its own flags in its own file
// (kernels_scalar.cc, kernels_avx2.cc, kernels_avx512.cc) and exports a table; vector_ops.cc
// calls the active level's table (isa.h). A level that this build cannot compile returns null.
#pragma once

#include <cstdint>

namespace sdx::cpu::simd {

// Order matches BinaryOp in vector_ops.h.
inline constexpr int kNumBinaryOps = 4;

struct KernelTable {
  // y[i] = f(x[i]) for i < n; y may equal x. Every element is computed by the same vector code
  // (tails through masked loads), so an element's bits do not depend on where a row starts.
  using UnaryFn = void (*)(const float* x, float* y, int64_t n);
  UnaryFn exp, erf, tanh, sigmoid, gelu, gelu_tanh, relu;
  void (*swish)(const float* x, float* y, int64_t n, float alpha);

  // y[i] = a[i] op b[i] (vv), a[i] op b[0] (vs), a[0] op b[i] (sv); exact IEEE operations.
  using BinaryFn = void (*)(const float* a, const float* b, float* y, int64_t n);
  BinaryFn binary_vv[kNumBinaryOps], binary_vs[kNumBinaryOps], binary_sv[kNumBinaryOps];

  // One contiguous row; see vector_ops.h.
  void (*softmax_row)(const float* x, float* y, int64_t n);
  void (*log_softmax_row)(const float* x, float* y, int64_t n);
  void (*norm_row)(const float* x, float* y, const float* scale, const float* bias, int64_t n, float epsilon, bool rms,
                   double* mean, double* inv_std);
  double (*row_sum)(const float* x, int64_t n);
  double (*row_sum_squares)(const float* x, int64_t n);
  double (*row_sum_abs)(const float* x, int64_t n);
  float (*row_max)(const float* x, int64_t n);
  float (*row_min)(const float* x, int64_t n);
  void (*lstm_cell)(const float* pre, const float* rh, const float* rb, float* c, float* h, int64_t n);
};

const KernelTable* scalar_table();
const KernelTable* avx2_table();    // null when not compiled for x86-64
const KernelTable* avx512_table();  // null when not compiled for x86-64

// The table of active_isa().
const KernelTable& active_table();

}  // namespace sdx::cpu::simd
