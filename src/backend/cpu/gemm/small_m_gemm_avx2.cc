// The AVX2/FMA/F16C kernel of small_m_gemm.h. Built for those extensions by function attributes (the
// project compiles with plain -O2), called only after small_m_gemm_vectorized() checked the CPU.
//
// A tile is R rows x V vectors of 8 columns: R * V accumulators stay in registers for the whole K loop,
// each loaded (and widened) W vector serves the R rows. R = 4, V = 2 for groups of four rows, R = 2, V = 4
// for a pair and R = 1, V = 8 for a lone row, so there are 8 independent FMA chains each way (enough to hide
// the FMA latency) and W is read once per four rows (MatMul [M, 1024] x [1024, 1024] at SDX_CPU_ISA=avx2,
// 1 thread: M = 4 147.3 -> 81.5 us, M = 8 273.6 -> 149.5 us against row pairs).
// Partial vectors (the last columns) load through a zero-padded copy or a mask, so each column still
// gets exactly the portable kernel's FMA chain.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/gemm/small_m_gemm.h"

#define SDX_AVX2_FN __attribute__((target("avx2,fma,f16c")))

namespace sdx::cpu::detail {
namespace {

SDX_AVX2_FN inline __m256i lane_mask(int64_t count) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), idx);
}

// 8 weights starting at element `off` of W (all in bounds).
template <WeightType kT>
SDX_AVX2_FN inline __m256 load_w(const void* w, int64_t off) {
  if constexpr (kT == WeightType::kFloat32) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + off);
  } else if constexpr (kT == WeightType::kFloat16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + off)));
  } else {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const int8_t*>(w) + off))));
  }
}

// The first `count` (1..7) weights from `off`, the other lanes 0; reads nothing past them.
template <WeightType kT>
SDX_AVX2_FN inline __m256 load_w_partial(const void* w, int64_t off, int64_t count) {
  if constexpr (kT == WeightType::kFloat32) {
    return _mm256_maskload_ps(static_cast<const float*>(w) + off, lane_mask(count));
  } else if constexpr (kT == WeightType::kFloat16) {
    uint16_t buf[8] = {};
    std::memcpy(buf, static_cast<const uint16_t*>(w) + off, static_cast<size_t>(count) * sizeof(uint16_t));
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(buf)));
  } else {
    int8_t buf[8] = {};
    std::memcpy(buf, static_cast<const int8_t*>(w) + off, static_cast<size_t>(count));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(buf))));
  }
}

// Rows of W ahead of the current one that the tile prefetches.
constexpr int64_t kPrefetchRows = 8;

struct Store {
  const float* scale;  // indexed by absolute column, or null
  float alpha, beta;
};

// Rows [0, R) of x/y, columns [n, n + cols) with cols <= 8 * V (kFull: cols == 8 * V).
template <WeightType kT, int R, int V, bool kFull>
SDX_AVX2_FN void tile(int64_t K, const float* x, int64_t ldx, const void* w, int64_t ldw, int64_t n, int64_t cols,
                      const Store& st, float* y, int64_t ldy) {
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  constexpr int64_t kElemBytes = kT == WeightType::kFloat32 ? 4 : kT == WeightType::kFloat16 ? 2 : 1;
  constexpr int64_t kLines = (8 * V * kElemBytes + 63) / 64;  // cache lines of one row of the tile
  const char* wbytes = static_cast<const char*>(w);
  for (int64_t k = 0; k < K; ++k) {
    const int64_t off = k * ldw + n;
    // The hardware prefetcher follows strided rows only slowly: ask for the row kPrefetchRows ahead.
    if (k + kPrefetchRows < K) {
      const char* ahead = wbytes + (off + kPrefetchRows * ldw) * kElemBytes;
#pragma GCC unroll 8
      for (int64_t l = 0; l < kLines; ++l) _mm_prefetch(ahead + 64 * l, _MM_HINT_T0);
    }
    __m256 xb[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) xb[r] = _mm256_broadcast_ss(x + r * ldx + k);
    // One W vector at a time, used by every row at once: with 8 accumulators, more live vectors would
    // spill an accumulator to the stack (a store-forwarding chain through memory).
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      __m256 wv;
      if (kFull || 8 * v + 8 <= cols)
        wv = load_w<kT>(w, off + 8 * v);
      else if (8 * v < cols)
        wv = load_w_partial<kT>(w, off + 8 * v, cols - 8 * v);
      else
        continue;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][v] = _mm256_fmadd_ps(xb[r], wv, acc[r][v]);
    }
  }
  const __m256 alpha = _mm256_set1_ps(st.alpha), beta = _mm256_set1_ps(st.beta);
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    const int64_t c0 = 8 * v;
    if (!kFull && c0 >= cols) break;
    const bool full = kFull || c0 + 8 <= cols;
    const __m256i mask = full ? _mm256_set1_epi32(-1) : lane_mask(cols - c0);
    __m256 scale = _mm256_setzero_ps();
    if (st.scale) scale = full ? _mm256_loadu_ps(st.scale + n + c0) : _mm256_maskload_ps(st.scale + n + c0, mask);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* yp = y + r * ldy + n + c0;
      __m256 s = acc[r][v];
      if (st.scale) s = _mm256_mul_ps(s, scale);
      if (st.alpha != 1.f) s = _mm256_mul_ps(alpha, s);
      if (st.beta != 0.f) {
        const __m256 old = full ? _mm256_loadu_ps(yp) : _mm256_maskload_ps(yp, mask);
        s = _mm256_fmadd_ps(beta, old, s);
      }
      if (full)
        _mm256_storeu_ps(yp, s);
      else
        _mm256_maskstore_ps(yp, mask, s);
    }
  }
}

template <WeightType kT, int R, int V>
SDX_AVX2_FN void rows_of(int64_t K, const float* x, int64_t ldx, const void* w, int64_t ldw, int64_t n0, int64_t n1,
                         const Store& st, float* y, int64_t ldy) {
  constexpr int64_t kCols = 8 * V;
  int64_t n = n0;
  for (; n + kCols <= n1; n += kCols) tile<kT, R, V, true>(K, x, ldx, w, ldw, n, kCols, st, y, ldy);
  if (n < n1) tile<kT, R, V, false>(K, x, ldx, w, ldw, n, n1 - n, st, y, ldy);
}

template <WeightType kT>
SDX_AVX2_FN void columns(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w, float alpha,
                         float beta, float* y, int64_t ldy, int64_t n0, int64_t n1) {
  const Store st{w.scale, alpha, beta};
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) rows_of<kT, 4, 2>(K, x + m * ldx, ldx, w.data, w.ldw, n0, n1, st, y + m * ldy, ldy);
  for (; m + 2 <= M; m += 2) rows_of<kT, 2, 4>(K, x + m * ldx, ldx, w.data, w.ldw, n0, n1, st, y + m * ldy, ldy);
  if (m < M) rows_of<kT, 1, 8>(K, x + m * ldx, ldx, w.data, w.ldw, n0, n1, st, y + m * ldy, ldy);
}

}  // namespace

void small_m_gemm_columns_avx2(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w,
                               float alpha, float beta, float* y, int64_t ldy, int64_t n0, int64_t n1) {
  switch (w.type) {
    case WeightType::kFloat32:
      return columns<WeightType::kFloat32>(M, K, x, ldx, w, alpha, beta, y, ldy, n0, n1);
    case WeightType::kFloat16:
      return columns<WeightType::kFloat16>(M, K, x, ldx, w, alpha, beta, y, ldy, n0, n1);
    case WeightType::kInt8:
      return columns<WeightType::kInt8>(M, K, x, ldx, w, alpha, beta, y, ldy, n0, n1);
  }
}

}  // namespace sdx::cpu::detail
#endif
