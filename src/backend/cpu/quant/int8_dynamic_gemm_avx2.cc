// The AVX2 code of int8_dynamic_gemm.h: the quantization of X (also used on VNNI machines) and the
// fallback kernel for CPUs without AVX-512 VNNI. Built for AVX2 by function attributes (the project
// compiles with plain -O2), called only after int8_dynamic_isa_supported() checked the CPU.
//
// Kernel: per 4-k group, 16 weight bytes (4 columns x 4 k) are sign-extended to 16 bits (vpmovsxbw) and
// multiplied by the row's 4 quantized bytes zero-extended and repeated (vpmaddwd), which adds adjacent
// pairs exactly into int32: each accumulator holds two partial sums per column, folded by vphaddd at the
// end. Not vpmaddubsw: it saturates its 16-bit pair sums (255 * 127 * 2 > 32767).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "backend/cpu/quant/int8_dynamic_gemm.h"

#define SDX_AVX2_FN __attribute__((target("avx2")))
#define SDX_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

namespace sdx::cpu::detail {
namespace {

SDX_AVX2_INLINE __m256i lane_mask(int64_t count) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), idx);
}

// q of 8 floats as int32 (-127..127): the contract's division, clamp and round half to even.
SDX_AVX2_INLINE __m256i quantize_lanes(__m256 v, __m256 s) {
  v = _mm256_div_ps(v, s);
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.f)), _mm256_set1_ps(127.f));
  return _mm256_cvtps_epi32(v);
}

// Quantized bytes (q + 128) of 8 floats, in the low 8 bytes.
SDX_AVX2_INLINE __m128i quantize8(__m256 v, __m256 s) {
  const __m256i i = _mm256_add_epi32(quantize_lanes(v, s), _mm256_set1_epi32(128));  // 1..255
  const __m256i p = _mm256_packus_epi16(_mm256_packs_epi32(i, i), _mm256_setzero_si256());
  return _mm_unpacklo_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
}

// Quantized bytes (q + 128) of 32 floats: signed packs (exact for -127..127), then the sign bit flipped
// (q + 128 modulo 256), then the 4-byte pieces put back in order (the packs work per 128-bit lane).
SDX_AVX2_INLINE __m256i quantize32(const float* x, __m256 s) {
  const __m256i a = quantize_lanes(_mm256_loadu_ps(x), s), b = quantize_lanes(_mm256_loadu_ps(x + 8), s);
  const __m256i c = quantize_lanes(_mm256_loadu_ps(x + 16), s), d = quantize_lanes(_mm256_loadu_ps(x + 24), s);
  // dwords: a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  const __m256i u = _mm256_xor_si256(p, _mm256_set1_epi8(static_cast<char>(0x80)));
  return _mm256_permutevar8x32_epi32(u, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

SDX_AVX2_INLINE int32_t load4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Rows [0, R) of the quantized x, columns [c0, c0 + 4 C) of a packed block (c0 < width; columns at or
// past `width` are computed on the zero padding but not stored). corr, scale and y start at the block's
// first column.
// zero: null (the correction is corr) or the rows' zero points (the correction is zero[r] * colsum).
// kInt: out is int32 and receives the corrected sums (scale and sx are not read); else float, scaled.
template <int R, int C, bool kInt>
SDX_AVX2_FN void tile(int64_t groups, const uint8_t* q, int64_t ldq, const float* sx, const int32_t* zero,
                      const int8_t* wb, int64_t c0, const int32_t* corr, const int32_t* colsum, const float* scale,
                      void* out, int64_t ldy, int64_t width) {
  static_assert(C % 2 == 0, "columns are folded in pairs of vectors");
  __m256i acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_si256();
  const int8_t* wg = wb + c0 * 4;
  for (int64_t g = 0; g < groups; ++g, wg += kInt8DynamicBlock * 4) {
    __m256i xw[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) xw[r] = _mm256_cvtepu8_epi16(_mm_set1_epi32(load4(q + r * ldq + 4 * g)));
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wg + 16 * c)));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(xw[r], wv));
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < C / 2; ++j) {
    const int64_t col = c0 + 8 * j;
    if (col >= width) break;
    const bool full = col + 8 <= width;
    const __m256i mask = full ? _mm256_set1_epi32(-1) : lane_mask(width - col);
    const __m256i corr_v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>((zero ? colsum : corr) + col));
    const __m256 scale_v = kInt ? _mm256_setzero_ps() : _mm256_loadu_ps(scale + col);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      // vphaddd folds within 128-bit lanes: columns 0 1 4 5 | 2 3 6 7; the permute restores 0..7.
      __m256i a = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][2 * j], acc[r][2 * j + 1]), 0xd8);
      a = _mm256_sub_epi32(a, zero ? _mm256_mullo_epi32(_mm256_set1_epi32(zero[r]), corr_v) : corr_v);
      if constexpr (kInt) {
        int* yi = static_cast<int32_t*>(out) + r * ldy + col;
        if (full)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(yi), a);
        else
          _mm256_maskstore_epi32(yi, mask, a);
        continue;
      }
      const __m256 s = _mm256_mul_ps(_mm256_set1_ps(sx[r]), scale_v);
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), s);
      float* yp = static_cast<float*>(out) + r * ldy + col;
      if (full)
        _mm256_storeu_ps(yp, v);
      else
        _mm256_maskstore_ps(yp, mask, v);
    }
  }
}

// Rows [0, R) over a whole block: tiles of 4 C columns.
template <int R, int C, bool kInt>
SDX_AVX2_FN void block_rows(int64_t groups, const uint8_t* q, int64_t ldq, const float* sx, const int32_t* zero,
                            const int8_t* wb, const int32_t* corr, const int32_t* colsum, const float* scale, void* y,
                            int64_t ldy, int64_t width) {
  for (int64_t c0 = 0; c0 < width; c0 += 4 * C)
    tile<R, C, kInt>(groups, q, ldq, sx, zero, wb, c0, corr, colsum, scale, y, ldy, width);
}

// Column blocks [b0, b1): float outputs (kInt false) or int32 sums (kInt true).
template <bool kInt>
SDX_AVX2_FN void blocks(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, void* y, int64_t ldy,
                        int64_t b0, int64_t b1) {
  const int64_t groups = w.padded_k() / 4, N = w.N();
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t n0 = b * kInt8DynamicBlock, width = std::min(kInt8DynamicBlock, N - n0);
    const int8_t* wb = w.block(b);
    const int32_t* corr = w.corr() + n0;
    const int32_t* colsum = w.colsum() + n0;
    const float* scale = kInt ? nullptr : w.scale() + n0;
    auto zero = [&](int64_t m) { return x.zero ? x.zero + m : nullptr; };
    auto sx = [&](int64_t m) { return kInt ? nullptr : x.scale + m; };
    auto at = [&](int64_t m) -> void* {
      if constexpr (kInt) return static_cast<int32_t*>(y) + m * ldy + n0;
      return static_cast<float*>(y) + m * ldy + n0;
    };
    int64_t m = 0;
    // Row pairs share each widened weight vector (8 accumulators either way).
    for (; m + 2 <= M; m += 2)
      block_rows<2, 4, kInt>(groups, x.q + m * x.ldq, x.ldq, sx(m), zero(m), wb, corr, colsum, scale, at(m), ldy, width);
    if (m < M)
      block_rows<1, 8, kInt>(groups, x.q + m * x.ldq, x.ldq, sx(m), zero(m), wb, corr, colsum, scale, at(m), ldy, width);
  }
}

}  // namespace

SDX_AVX2_FN void int8_dynamic_quantize_avx2(int64_t M, int64_t K, const float* x, int64_t ldx, uint8_t* q,
                                            int64_t ldq, float* scale) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * ldx;
    uint8_t* qr = q + m * ldq;
    const uint32_t amax_bits = row_amax_bits(IntGemmIsa::kAvx2, xr, K);
    float s;
    if (!int8_dynamic_row_scale(amax_bits, qr, K, ldq, &scale[m], &s)) continue;
    const __m256 vs = _mm256_set1_ps(s);
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + k), quantize32(xr + k, vs));
    for (; k + 8 <= K; k += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(qr + k), quantize8(_mm256_loadu_ps(xr + k), vs));
    if (k < K) {
      // Masked-off lanes are 0 (quantized to 128) and not stored.
      alignas(16) uint8_t buf[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(buf), quantize8(_mm256_maskload_ps(xr + k, lane_mask(K - k)), vs));
      std::memcpy(qr + k, buf, static_cast<size_t>(K - k));
    }
  }
}

SDX_AVX2_FN void int8_dynamic_blocks_avx2(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, float* y,
                                          int64_t ldy, int64_t b0, int64_t b1) {
  blocks<false>(M, x, w, y, ldy, b0, b1);
}

SDX_AVX2_FN void int8_integer_blocks_avx2(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, int32_t* y,
                                          int64_t ldy, int64_t b0, int64_t b1) {
  blocks<true>(M, x, w, y, ldy, b0, b1);
}

}  // namespace sdx::cpu::detail
#endif
