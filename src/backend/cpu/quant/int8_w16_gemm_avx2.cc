// The AVX2 code of int8_w16_gemm.h: the quantization of X to int16 (also used on VNNI machines) and the
// fallback kernel for CPUs without AVX-512 VNNI. Built for AVX2 by function attributes (the project
// compiles with plain -O2), called only after int_gemm_isa_supported() checked the CPU.
//
// Kernel: per k pair, 16 weight bytes (8 columns x 2 k, int8_w16_gemm.h's layout) are sign-extended to
// 16 bits (vpmovsxbw) and multiplied by the row's 2 quantized values repeated (vpmaddwd), which adds the
// two products of each column exactly into its int32 lane: one accumulator holds 8 columns, no folding.
// Chunks of kInt8W16ChunkK values of k are summed in int32, then added exactly in double.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/quant/int8_w16_gemm.h"

#define SDX_AVX2_FN __attribute__((target("avx2")))
#define SDX_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

namespace sdx::cpu::detail {
namespace {

constexpr int64_t kPairBytes = kInt8W16Block * 2;  // one k pair of a packed block
constexpr int64_t kChunkPairs = kInt8W16ChunkK / 2;

SDX_AVX2_INLINE __m256i lane_mask(int64_t count) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), idx);
}

// q of 8 floats as int32 (-32767..32767): the contract's division, clamp and round half to even.
SDX_AVX2_INLINE __m256i quantize_lanes(__m256 v, __m256 s) {
  v = _mm256_div_ps(v, s);
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-32767.f)), _mm256_set1_ps(32767.f));
  return _mm256_cvtps_epi32(v);
}

// q of 16 floats as int16, in order: signed packs (exact for -32767..32767) work per 128-bit lane
// (a0-3 b0-3 | a4-7 b4-7); the permute restores a0-7 b0-7.
SDX_AVX2_INLINE __m256i quantize16(__m256 lo, __m256 hi, __m256 s) {
  const __m256i p = _mm256_packs_epi32(quantize_lanes(lo, s), quantize_lanes(hi, s));
  return _mm256_permute4x64_epi64(p, 0xd8);
}

SDX_AVX2_INLINE int32_t load_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// acc[r][c] = the int32 sums over `pairs` k pairs, for rows [0, R) of q (at the chunk's first pair) and the
// 8 C columns at wp (the chunk's first pair, the tile's first column).
template <int R, int C>
SDX_AVX2_INLINE void chunk_sums(const int8_t* wp, const int16_t* q, int64_t ldq, int64_t pairs, __m256i (&acc)[R][C]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_si256();
  for (int64_t p = 0; p < pairs; ++p, wp += kPairBytes) {
    __m256i xb[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) xb[r] = _mm256_set1_epi32(load_pair(q + r * ldq + 2 * p));
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp + 16 * c)));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(xb[r], wv));
    }
  }
}

// Rows [0, R) of the quantized x, columns [c0, c0 + 8 C) of a packed block (c0 < width; columns at or past
// `width` are computed on the zero padding but not stored). scale and y start at the block's first column.
template <int R, int C>
SDX_AVX2_FN void tile(int64_t pairs, const int16_t* q, int64_t ldq, const float* sx, const int8_t* wb, int64_t c0,
                      const float* scale, float* y, int64_t ldy, int64_t width) {
  const int8_t* w0 = wb + c0 * 2;
  __m256i acc[R][C];
  __m256 sum[R][C];  // the exact sums rounded once to float
  if (pairs <= kChunkPairs) {
    chunk_sums<R, C>(w0, q, ldq, pairs, acc);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) sum[r][c] = _mm256_cvtepi32_ps(acc[r][c]);
  } else {
    // The exact totals live in memory, not registers: kept in registers across the chunk loop they would
    // crowd out the accumulators (R C ymm) and spill inside it.
    alignas(32) double total[R][8 * C] = {};
    for (int64_t p0 = 0; p0 < pairs; p0 += kChunkPairs) {
      chunk_sums<R, C>(w0 + p0 * kPairBytes, q + 2 * p0, ldq, std::min(kChunkPairs, pairs - p0), acc);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
          double* t = total[r] + 8 * c;
          _mm256_store_pd(t, _mm256_add_pd(_mm256_load_pd(t), _mm256_cvtepi32_pd(_mm256_castsi256_si128(acc[r][c]))));
          _mm256_store_pd(
              t + 4, _mm256_add_pd(_mm256_load_pd(t + 4), _mm256_cvtepi32_pd(_mm256_extracti128_si256(acc[r][c], 1))));
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c)
        sum[r][c] = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_load_pd(total[r] + 8 * c + 4)),
                                    _mm256_cvtpd_ps(_mm256_load_pd(total[r] + 8 * c)));
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const int64_t col = c0 + 8 * c;
    if (col >= width) break;
    const bool full = col + 8 <= width;
    const __m256i mask = full ? _mm256_set1_epi32(-1) : lane_mask(width - col);
    const __m256 scale_v = _mm256_loadu_ps(scale + col);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 s = _mm256_mul_ps(_mm256_set1_ps(sx[r]), scale_v);
      const __m256 out = _mm256_mul_ps(sum[r][c], s);
      float* yp = y + r * ldy + col;
      if (full)
        _mm256_storeu_ps(yp, out);
      else
        _mm256_maskstore_ps(yp, mask, out);
    }
  }
}

// Rows [0, R) over a whole block: tiles of 8 C columns.
template <int R, int C>
SDX_AVX2_FN void block_rows(int64_t pairs, const int16_t* q, int64_t ldq, const float* sx, const int8_t* wb,
                            const float* scale, float* y, int64_t ldy, int64_t width) {
  for (int64_t c0 = 0; c0 < width; c0 += 8 * C) tile<R, C>(pairs, q, ldq, sx, wb, c0, scale, y, ldy, width);
}

}  // namespace

SDX_AVX2_FN void int8_w16_quantize_avx2(int64_t K, const float* x, float s, int16_t* q) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t k = 0;
  for (; k + 16 <= K; k += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k),
                        quantize16(_mm256_loadu_ps(x + k), _mm256_loadu_ps(x + k + 8), vs));
  if (k < K) {
    // Masked-off lanes read 0 (quantized to 0) and are not stored.
    alignas(32) int16_t buf[16];
    const __m256 lo = _mm256_maskload_ps(x + k, lane_mask(K - k));
    const __m256 hi = _mm256_maskload_ps(x + k + 8, lane_mask(K - k - 8));
    _mm256_store_si256(reinterpret_cast<__m256i*>(buf), quantize16(lo, hi, vs));
    std::memcpy(q + k, buf, static_cast<size_t>(K - k) * sizeof(int16_t));
  }
}

SDX_AVX2_FN void int8_w16_blocks_avx2(int64_t M, const Int8W16Rows& x, const Int8W16Weights& w, float* y, int64_t ldy,
                                      int64_t b0, int64_t b1) {
  const int64_t pairs = w.padded_k() / 2, N = w.N();
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t n0 = b * kInt8W16Block, width = std::min(kInt8W16Block, N - n0);
    const int8_t* wb = w.block(b);
    const float* scale = w.scale() + n0;
    int64_t m = 0;
    // Row pairs share each widened weight vector (8 accumulators); a single row takes 32 columns at a time:
    // with 8 accumulators GCC 12 spills inside the k loop (it doubles the accumulators with register
    // copies), and the multi-chunk K = 1024 ran 1.3x slower.
    for (; m + 2 <= M; m += 2)
      block_rows<2, 4>(pairs, x.q + m * x.ldq, x.ldq, x.scale + m, wb, scale, y + m * ldy + n0, ldy, width);
    if (m < M) block_rows<1, 4>(pairs, x.q + m * x.ldq, x.ldq, x.scale + m, wb, scale, y + m * ldy + n0, ldy, width);
  }
}

}  // namespace sdx::cpu::detail
#endif
