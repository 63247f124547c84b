// dot_rows: y[j] = alpha * dot(x, R[j]) for n rows R[j] = rows + j * ld of length d: a vector times the
// transpose of a row-major matrix (attention scores of one query row against its keys, q . K^T), which
// a GEMM call would serve only after its per-call set-up.
//
//   cpu::dot_rows(q, k, /*ld=*/head_dim, /*n=*/keys, /*d=*/head_dim, scale, scores);
//
// Arithmetic (the same on the AVX2/FMA path and the portable one, so results are bitwise identical):
// with d8 = d rounded down to 8, lane l < 8 holds a_l = fma chain over k = l, l + 8, ... < d8 from 0;
// s = ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)); then s = fma(x[k], R[j][k], s) for k in [d8, d)
// ascending; y[j] = alpha * s.
#pragma once

#include <cstdint>

namespace sdx::cpu {

void dot_rows(const float* x, const float* rows, int64_t ld, int64_t n, int64_t d, float alpha, float* y);

namespace detail {
void dot_rows_portable(const float* x, const float* rows, int64_t ld, int64_t n, int64_t d, float alpha, float* y);
// Whether dot_rows takes the AVX2/FMA path on this machine.
bool dot_rows_vectorized();
}  // namespace detail

}  // namespace sdx::cpu
