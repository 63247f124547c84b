// The AVX-512 VNNI kernel of int8_w16_gemm.h. Built for avx512f/bw/vl/vnni by function attributes (the
// project compiles with plain -O2), called only after int_gemm_isa_supported() checked the CPU.
//
// A tile is R rows x one packed block of 64 columns (4 zmm of 16 int32 lanes). Per k pair: four 32-byte
// weight loads sign-extended to int16 (vpmovsxbw ymm -> zmm) shared by the R rows, one vpbroadcastd of the
// row's 2 quantized values, one vpdpwssd (s16 x s16, the 2 products of a column summed into its int32
// lane, no saturation) per row and vector. Chunks of kInt8W16ChunkK values of k are summed in int32, then
// added exactly in double (vcvtdq2pd, vaddpd) and rounded once to float at the end (vcvtpd2ps); a K that
// fits one chunk (the decoder's 256) converts the int32 sums directly.
// Measured on Zen 4 (bench/int8_w16_gemv.cc): at M = 1 the loop runs ~5.5 cycles per k pair and block
// whether W is in L1 or L2, i.e. bound by the vpdpwssd / vpmovsxbw issue rate, not by the bytes of W
// (vpdpwssd does 32 products per instruction where W8A8's vpdpbusd does 64); unrolling over 2 k pairs with
// separate accumulators and software prefetch (256 B - 2 KiB ahead) gained nothing.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/quant/int8_w16_gemm.h"

#define SDX_VNNI_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define SDX_VNNI_INLINE __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline)) inline

namespace sdx::cpu::detail {
namespace {

constexpr int64_t kPairBytes = kInt8W16Block * 2;  // one k pair of a packed block
constexpr int64_t kChunkPairs = kInt8W16ChunkK / 2;

SDX_VNNI_INLINE __m512i broadcast_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// acc[r][v] = the int32 sums over `pairs` k pairs for rows [0, R) of q (at the chunk's first pair), the
// block's 64 columns at wp (the chunk's first pair, 64-byte aligned).
template <int R>
SDX_VNNI_INLINE void chunk_sums(const int8_t* wp, const int16_t* q, int64_t ldq, int64_t pairs, __m512i (&acc)[R][4]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_setzero_si512();
  for (int64_t p = 0; p < pairs; ++p, wp += kPairBytes) {
    __m512i wv[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v)
      wv[v] = _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(wp + 32 * v)));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i xb = broadcast_pair(q + r * ldq + 2 * p);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_dpwssd_epi32(acc[r][v], xb, wv[v]);
    }
  }
}

// Rows [0, R) of the quantized x over one packed block; columns at or past `width` are computed on the zero
// padding but not stored. scale and y start at the block's first column.
template <int R>
SDX_VNNI_FN void tile(int64_t pairs, const int16_t* q, int64_t ldq, const float* sx, const int8_t* wb,
                      const float* scale, float* y, int64_t ldy, int64_t width) {
  __m512i acc[R][4];
  __m512 sum[R][4];  // the exact sums rounded once to float
  if (pairs <= kChunkPairs) {
    chunk_sums<R>(wb, q, ldq, pairs, acc);
    // Zero-masking forms with full masks here and below: GCC 12's plain intrinsics trip
    // -Wmaybe-uninitialized on their _mm512_undefined_*() placeholders. Same instructions (vcvtdq2ps
    // rounds to nearest even).
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) sum[r][v] = _mm512_maskz_cvtepi32_ps(__mmask16(0xffff), acc[r][v]);
  } else {
    // The exact totals live in memory, not registers: kept in registers across the chunk loop they would
    // crowd out the accumulators (4 R zmm) and spill inside it.
    alignas(64) double total[R][kInt8W16Block] = {};
    for (int64_t p0 = 0; p0 < pairs; p0 += kChunkPairs) {
      chunk_sums<R>(wb + p0 * kPairBytes, q + 2 * p0, ldq, std::min(kChunkPairs, pairs - p0), acc);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          double* t = total[r] + 16 * v;
          const __m256i lo = _mm512_maskz_extracti64x4_epi64(0xff, acc[r][v], 0);
          const __m256i hi = _mm512_maskz_extracti64x4_epi64(0xff, acc[r][v], 1);
          _mm512_store_pd(t, _mm512_add_pd(_mm512_load_pd(t), _mm512_maskz_cvtepi32_pd(__mmask8(0xff), lo)));
          _mm512_store_pd(t + 8, _mm512_add_pd(_mm512_load_pd(t + 8), _mm512_maskz_cvtepi32_pd(__mmask8(0xff), hi)));
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        // Each exact double rounded once to float (nearest even), the halves put back together.
        const __m256 lo = _mm512_maskz_cvtpd_ps(__mmask8(0xff), _mm512_load_pd(total[r] + 16 * v));
        const __m256 hi = _mm512_maskz_cvtpd_ps(__mmask8(0xff), _mm512_load_pd(total[r] + 16 * v + 8));
        sum[r][v] = _mm512_castpd_ps(
            _mm512_maskz_insertf64x4(0xff, _mm512_maskz_insertf64x4(0xff, _mm512_setzero_pd(), _mm256_castps_pd(lo), 0),
                                     _mm256_castps_pd(hi), 1));
      }
  }
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    const int64_t col = 16 * v;
    if (col >= width) break;
    const __mmask16 mask = col + 16 <= width ? __mmask16(0xffff) : __mmask16((1u << (width - col)) - 1);
    const __m512 scale_v = _mm512_loadu_ps(scale + col);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 s = _mm512_mul_ps(_mm512_set1_ps(sx[r]), scale_v);
      _mm512_mask_storeu_ps(y + r * ldy + col, mask, _mm512_mul_ps(sum[r][v], s));
    }
  }
}

}  // namespace

SDX_VNNI_FN void int8_w16_blocks_vnni(int64_t M, const Int8W16Rows& x, const Int8W16Weights& w, float* y, int64_t ldy,
                                      int64_t b0, int64_t b1) {
  const int64_t pairs = w.padded_k() / 2, N = w.N();
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t n0 = b * kInt8W16Block, width = std::min(kInt8W16Block, N - n0);
    const int8_t* wb = w.block(b);
    const float* scale = w.scale() + n0;
    for (int64_t m = 0; m < M;) {
      const int16_t* q = x.q + m * x.ldq;
      const float* sx = x.scale + m;
      float* yb = y + m * ldy + n0;
      switch (std::min<int64_t>(M - m, 4)) {
        case 4: tile<4>(pairs, q, x.ldq, sx, wb, scale, yb, ldy, width); m += 4; break;
        case 3: tile<3>(pairs, q, x.ldq, sx, wb, scale, yb, ldy, width); m += 3; break;
        case 2: tile<2>(pairs, q, x.ldq, sx, wb, scale, yb, ldy, width); m += 2; break;
        default: tile<1>(pairs, q, x.ldq, sx, wb, scale, yb, ldy, width); m += 1; break;
      }
    }
  }
}

}  // namespace sdx::cpu::detail
#endif
