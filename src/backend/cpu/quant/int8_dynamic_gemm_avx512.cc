// The AVX-512 VNNI kernel of int8_dynamic_gemm.h. Built for avx512f/bw/vl/vnni by function attributes
// (the project compiles with plain -O2), called only after int8_dynamic_isa_supported() checked the CPU.
//
// A tile is R rows x one packed block of 64 columns (4 zmm of 16 int32 lanes). Per 4-k group: four
// 64-byte weight loads shared by the R rows, one vpbroadcastd of the row's 4 quantized bytes, one vpdpbusd
// (u8 x s8, 4 products summed into each int32 lane, no saturation) per row and vector. vpdpbusd's latency
// needs more than 4 independent chains, so with few rows the K loop is unrolled over U groups with their own
// accumulators (R * U * 4 <= 16 zmm), summed at the end: integer sums, so the order changes no bit.
// The packed blocks are read sequentially; software prefetch (1-4 KiB ahead) gained nothing on Zen 4, with
// the weights in L2 or in L3 (bench/int8_dynamic_gemv.cc, --cold).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/quant/int8_dynamic_gemm.h"

#define SDX_VNNI_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define SDX_VNNI_INLINE __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline)) inline

namespace sdx::cpu::detail {
namespace {

constexpr int64_t kGroupBytes = kInt8DynamicBlock * 4;  // one 4-k group of a packed block

SDX_VNNI_INLINE __m512i broadcast4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// acc[r][v] += the 4-k group at wg for rows [0, R) of q (group index g).
template <int R>
SDX_VNNI_INLINE void group(const int8_t* wg, const uint8_t* q, int64_t ldq, int64_t g, __m512i (&acc)[R][4]) {
  __m512i wv[4];
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) wv[v] = _mm512_load_si512(wg + 64 * v);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512i xb = broadcast4(q + r * ldq + 4 * g);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], xb, wv[v]);
  }
}

// Rows [0, R) of the quantized x over one packed block (64-byte aligned); columns at or past `width` are
// computed on the zero padding but not stored. corr, scale and y start at the block's first column.
// zero: null (the correction is corr) or the rows' zero points (the correction is zero[r] * colsum).
// kInt: out is int32 and receives the corrected sums (scale and sx are not read); else float, scaled.
template <int R, int U, bool kInt>
SDX_VNNI_FN void tile(int64_t groups, const uint8_t* q, int64_t ldq, const float* sx, const int32_t* zero,
                      const int8_t* wb, const int32_t* corr, const int32_t* colsum, const float* scale, void* out,
                      int64_t ldy, int64_t width) {
  __m512i acc[U][R][4];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[u][r][v] = _mm512_setzero_si512();
  int64_t g = 0;
  for (; g + U <= groups; g += U) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) group<R>(wb + (g + u) * kGroupBytes, q, ldq, g + u, acc[u]);
  }
  for (; g < groups; ++g) group<R>(wb + g * kGroupBytes, q, ldq, g, acc[0]);
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    const int64_t col = 16 * v;
    if (col >= width) break;
    const __mmask16 mask = col + 16 <= width ? __mmask16(0xffff) : __mmask16((1u << (width - col)) - 1);
    const __m512i corr_v = _mm512_loadu_si512((zero ? colsum : corr) + col);
    const __m512 scale_v = kInt ? _mm512_setzero_ps() : _mm512_loadu_ps(scale + col);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512i a = acc[0][r][v];
#pragma GCC unroll 4
      for (int u = 1; u < U; ++u) a = _mm512_add_epi32(a, acc[u][r][v]);
      a = _mm512_sub_epi32(a, zero ? _mm512_mullo_epi32(_mm512_set1_epi32(zero[r]), corr_v) : corr_v);
      if constexpr (kInt) {
        _mm512_mask_storeu_epi32(static_cast<int32_t*>(out) + r * ldy + col, mask, a);
        continue;
      }
      const __m512 s = _mm512_mul_ps(_mm512_set1_ps(sx[r]), scale_v);
      // The zero-masking form: GCC 12's plain _mm512_cvtepi32_ps trips -Wmaybe-uninitialized on its
      // _mm512_undefined_ps() placeholder. Same vcvtdq2ps, rounding to nearest even.
      _mm512_mask_storeu_ps(static_cast<float*>(out) + r * ldy + col, mask,
                            _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(mask, a), s));
    }
  }
}

// Column blocks [b0, b1): float outputs (kInt false) or int32 sums (kInt true).
template <bool kInt>
SDX_VNNI_FN void blocks(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, void* y, int64_t ldy,
                        int64_t b0, int64_t b1) {
  const int64_t groups = w.padded_k() / 4, N = w.N();
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t n0 = b * kInt8DynamicBlock, width = std::min(kInt8DynamicBlock, N - n0);
    const int8_t* wb = w.block(b);
    const int32_t* corr = w.corr() + n0;
    const int32_t* colsum = w.colsum() + n0;
    const float* scale = w.scale() + n0;
    for (int64_t m = 0; m < M;) {
      const uint8_t* q = x.q + m * x.ldq;
      const float* sx = kInt ? nullptr : x.scale + m;
      const int32_t* zero = x.zero ? x.zero + m : nullptr;
      void* yb = kInt ? static_cast<void*>(static_cast<int32_t*>(y) + m * ldy + n0)
                      : static_cast<void*>(static_cast<float*>(y) + m * ldy + n0);
      switch (std::min<int64_t>(M - m, 4)) {
        case 4: tile<4, 1, kInt>(groups, q, x.ldq, sx, zero, wb, corr, colsum, scale, yb, ldy, width); m += 4; break;
        case 3: tile<3, 1, kInt>(groups, q, x.ldq, sx, zero, wb, corr, colsum, scale, yb, ldy, width); m += 3; break;
        case 2: tile<2, 2, kInt>(groups, q, x.ldq, sx, zero, wb, corr, colsum, scale, yb, ldy, width); m += 2; break;
        default: tile<1, 4, kInt>(groups, q, x.ldq, sx, zero, wb, corr, colsum, scale, yb, ldy, width); m += 1; break;
      }
    }
  }
}

}  // namespace

SDX_VNNI_FN void int8_dynamic_blocks_vnni(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, float* y,
                                          int64_t ldy, int64_t b0, int64_t b1) {
  blocks<false>(M, x, w, y, ldy, b0, b1);
}

SDX_VNNI_FN void int8_integer_blocks_vnni(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, int32_t* y,
                                          int64_t ldy, int64_t b0, int64_t b1) {
  blocks<true>(M, x, w, y, ldy, b0, b1);
}

}  // namespace sdx::cpu::detail
#endif
