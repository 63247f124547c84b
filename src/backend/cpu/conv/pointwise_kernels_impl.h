// The pointwise loop over a simd level S (see pointwise_kernels.h); included only by
// pointwise_kernels_{scalar,avx2,avx512}.cc, whose S types live in their own anonymous namespaces.
//
// A block of R output channels x NV vectors of columns keeps R * NV accumulators in registers over all
// input channels: each step loads NV vectors of one input row and multiplies them by R broadcast
// weights (AVX-512: 6 x 4 vectors of 16, 24 accumulators of 32 registers; AVX2: 4 x 2 vectors of 8).
// The output channels go in groups of R, each over all the columns in blocks of NV vectors.
#pragma once

#include <cstdint>

#include "backend/cpu/conv/pointwise_kernels.h"

namespace sdx::cpu::pw {

template <class S>
struct Tiles;  // R (output channels) and NV (column vectors) per block of level S

template <class S, int R, int NV, bool Partial>
inline void block(const float* w, const float* b, int64_t C, const float* x, int64_t ldx, float* y, int64_t ldy,
                  int64_t part) {
  constexpr int64_t L = S::kLanes;
  using F = typename S::F;
  // The loops over r and v are unrolled (the project builds at -O2, which does not), so that acc stays
  // in registers.
  F acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const F bias = S::set1(b ? b[r] : 0.f);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = bias;
  }
  for (int64_t c = 0; c < C; ++c) {
    const float* xc = x + c * ldx;
    F xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) xv[v] = Partial && v == NV - 1 ? S::load_partial(xc + v * L, part) : S::load(xc + v * L);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const F wv = S::set1(w[r * C + c]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = S::fmadd(xv[v], wv, acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (Partial && v == NV - 1) S::store_partial(y + r * ldy + v * L, acc[r][v], part);
      else S::store(y + r * ldy + v * L, acc[r][v]);
    }
}

// Output channels [0, R) of w, b and y over n columns: blocks of NV vectors, then the rest as one block
// of 1 .. NV vectors (V below), its last vector `part` lanes wide when the count is not a multiple of
// the lanes.
template <class S, int R, int V>
void rest_block(int64_t nv, int64_t part, const float* w, const float* b, int64_t C, const float* x, int64_t ldx,
                float* y, int64_t ldy) {
  if constexpr (V >= 1) {
    if (nv < V) return rest_block<S, R, V - 1>(nv, part, w, b, C, x, ldx, y, ldy);
    if (part == S::kLanes) block<S, R, V, false>(w, b, C, x, ldx, y, ldy, 0);
    else block<S, R, V, true>(w, b, C, x, ldx, y, ldy, part);
  }
}

template <class S, int R>
void row_group(const float* w, const float* b, int64_t C, const float* x, int64_t ldx, float* y, int64_t ldy,
               int64_t n) {
  constexpr int NV = Tiles<S>::kNV;
  constexpr int64_t L = S::kLanes;
  int64_t j = 0;
  for (; j + NV * L <= n; j += NV * L) block<S, R, NV, false>(w, b, C, x + j, ldx, y + j, ldy, 0);
  const int64_t rest = n - j;
  if (rest == 0) return;
  const int64_t nv = (rest + L - 1) / L;
  rest_block<S, R, NV>(nv, rest - (nv - 1) * L, w, b, C, x + j, ldx, y + j, ldy);
}

// The last group of 1 .. R channels (Rows of them).
template <class S, int Rows>
void last_group(int64_t rows, const float* w, const float* b, int64_t C, const float* x, int64_t ldx, float* y,
                int64_t ldy, int64_t n) {
  if constexpr (Rows >= 1) {
    if (rows < Rows) return last_group<S, Rows - 1>(rows, w, b, C, x, ldx, y, ldy, n);
    row_group<S, Rows>(w, b, C, x, ldx, y, ldy, n);
  }
}

// Groups of R output channels, each over all n columns: the group's weights stay in L1 and the
// columns' inputs (the caller's chunk, C x n) in L2 while every group reads them.
template <class S>
void cols(const float* w, const float* b, int64_t M, int64_t C, const float* x, int64_t ldx, float* y, int64_t ldy,
          int64_t n) {
  constexpr int R = Tiles<S>::kR;
  int64_t m = 0;
  for (; m + R <= M; m += R) row_group<S, R>(w + m * C, b ? b + m : nullptr, C, x, ldx, y + m * ldy, ldy, n);
  if (m < M) last_group<S, R - 1>(M - m, w + m * C, b ? b + m : nullptr, C, x, ldx, y + m * ldy, ldy, n);
}

template <class S>
constexpr Kernels make_kernels() {
  return Kernels{&cols<S>};
}

}  // namespace sdx::cpu::pw
