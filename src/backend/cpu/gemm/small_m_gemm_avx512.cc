// The AVX-512 kernel of small_m_gemm.h. Built for avx512f (with avx2, fma, f16c) by function attributes
// (the project compiles with plain -O2), called only when simd::active_isa() is AVX-512.
//
// Why a kernel of its own and not the AVX2 one on wider vectors: the AVX2 kernel's 16 registers hold a
// tile of at most 2 rows, so M rows stream W M/2 times; at M = 8 (a batch of decode steps) that was 4
// passes over W. 32 registers hold a tile of every row up to 8 at once (8 rows x 2 vectors of 16 columns
// = 16 accumulators), so W is read once whatever M <= 8 is. Measured on MatMul [M, 1024] x [1024, 1024]
// (bench/README.md, "Small-M GEMM": 1 thread, p50).
//
// A tile is R rows x V vectors of 16 columns, R * V accumulators in registers for the whole K loop; each
// loaded (and widened) W vector serves the R rows. Partial vectors (the last columns) load through a mask
// (float32) or a zero-padded copy (float16, int8), so each column gets exactly the portable kernel's FMA
// chain, and the results are bitwise those of the portable and AVX2 kernels.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/gemm/small_m_gemm.h"

#define SDX_AVX512_FN __attribute__((target("avx512f,avx2,fma,f16c")))

namespace sdx::cpu::detail {
namespace {

SDX_AVX512_FN inline __mmask16 lane_mask(int64_t count) {
  return static_cast<__mmask16>((1u << static_cast<unsigned>(count)) - 1u);
}

// 16 weights starting at element `off` of W (all in bounds).
template <WeightType kT>
SDX_AVX512_FN inline __m512 load_w(const void* w, int64_t off) {
  if constexpr (kT == WeightType::kFloat32) {
    return _mm512_loadu_ps(static_cast<const float*>(w) + off);
  } else if constexpr (kT == WeightType::kFloat16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(w) + off)));
  } else {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const int8_t*>(w) + off))));
  }
}

// The first `count` (1..15) weights from `off`, the other lanes 0; reads nothing past them.
template <WeightType kT>
SDX_AVX512_FN inline __m512 load_w_partial(const void* w, int64_t off, int64_t count) {
  if constexpr (kT == WeightType::kFloat32) {
    return _mm512_maskz_loadu_ps(lane_mask(count), static_cast<const float*>(w) + off);
  } else if constexpr (kT == WeightType::kFloat16) {
    uint16_t buf[16] = {};
    std::memcpy(buf, static_cast<const uint16_t*>(w) + off, static_cast<size_t>(count) * sizeof(uint16_t));
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf)));
  } else {
    int8_t buf[16] = {};
    std::memcpy(buf, static_cast<const int8_t*>(w) + off, static_cast<size_t>(count));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(buf))));
  }
}

// Rows of W ahead of the current one that the tile prefetches.
constexpr int64_t kPrefetchRows = 32;

struct Store {
  const float* scale;  // indexed by absolute column, or null
  float alpha, beta;
};

// Rows [0, R) of x/y, columns [n, n + cols) with cols <= 16 * V (kFull: cols == 16 * V).
template <WeightType kT, int R, int V, bool kFull>
SDX_AVX512_FN void tile(int64_t K, const float* x, int64_t ldx, const void* w, int64_t ldw, int64_t n, int64_t cols,
                        const Store& st, float* y, int64_t ldy) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  constexpr int64_t kElemBytes = kT == WeightType::kFloat32 ? 4 : kT == WeightType::kFloat16 ? 2 : 1;
  // Cache lines prefetched per row: the tile's, and at least the whole 64-column block it lies in. A tile of
  // 32 columns (5..8 rows) is the first of two passes over its block; fetching the block's whole rows in the
  // first lets the second read them from L2 instead of streaming W from memory a second time.
  constexpr int64_t kLines = ((16 * V > 64 ? 16 * V : 64) * kElemBytes + 63) / 64;
  const int64_t block_col = 16 * V >= 64 ? n : n - n % 64;
  const char* wbytes = static_cast<const char*>(w);
  for (int64_t k = 0; k < K; ++k) {
    const int64_t off = k * ldw + n;
    if (kPrefetchRows > 0 && k + kPrefetchRows < K) {
      const char* ahead = wbytes + ((k + kPrefetchRows) * ldw + block_col) * kElemBytes;
#pragma GCC unroll 8
      for (int64_t l = 0; l < kLines; ++l) _mm_prefetch(ahead + 64 * l, _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      __m512 wv;
      if (kFull || 16 * v + 16 <= cols)
        wv = load_w<kT>(w, off + 16 * v);
      else if (16 * v < cols)
        wv = load_w_partial<kT>(w, off + 16 * v, cols - 16 * v);
      else
        continue;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][v] = _mm512_fmadd_ps(_mm512_set1_ps(x[r * ldx + k]), wv, acc[r][v]);
    }
  }
  const __m512 alpha = _mm512_set1_ps(st.alpha), beta = _mm512_set1_ps(st.beta);
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    const int64_t c0 = 16 * v;
    if (!kFull && c0 >= cols) break;
    const bool full = kFull || c0 + 16 <= cols;
    const __mmask16 mask = full ? static_cast<__mmask16>(0xFFFF) : lane_mask(cols - c0);
    __m512 scale = _mm512_setzero_ps();
    if (st.scale) scale = _mm512_maskz_loadu_ps(mask, st.scale + n + c0);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* yp = y + r * ldy + n + c0;
      __m512 s = acc[r][v];
      if (st.scale) s = _mm512_mul_ps(s, scale);
      if (st.alpha != 1.f) s = _mm512_mul_ps(alpha, s);
      if (st.beta != 0.f) s = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(mask, yp), s);
      _mm512_mask_storeu_ps(yp, mask, s);
    }
  }
}

template <WeightType kT, int R, int V>
SDX_AVX512_FN void rows_of(int64_t K, const float* x, int64_t ldx, const void* w, int64_t ldw, int64_t n0, int64_t n1,
                           const Store& st, float* y, int64_t ldy) {
  constexpr int64_t kCols = 16 * V;
  int64_t n = n0;
  for (; n + kCols <= n1; n += kCols) tile<kT, R, V, true>(K, x, ldx, w, ldw, n, kCols, st, y, ldy);
  if (n < n1) tile<kT, R, V, false>(K, x, ldx, w, ldw, n, n1 - n, st, y, ldy);
}

// R rows at once, R * V accumulators: 8 chains for one or two rows (enough to hide the FMA latency), up to
// 16 for more (V = 2 from 5 rows: two 32-column tiles per 64-column block, each W vector still read once).
template <WeightType kT>
SDX_AVX512_FN void row_group(int R, int64_t K, const float* x, int64_t ldx, const void* w, int64_t ldw, int64_t n0,
                             int64_t n1, const Store& st, float* y, int64_t ldy) {
  switch (R) {
    case 1: return rows_of<kT, 1, 8>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
    case 2: return rows_of<kT, 2, 4>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
    case 3: return rows_of<kT, 3, 4>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
    case 4: return rows_of<kT, 4, 4>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
    case 5: return rows_of<kT, 5, 4>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
    case 6: return rows_of<kT, 6, 4>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
    case 7: return rows_of<kT, 7, 4>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
    default: return rows_of<kT, 8, 2>(K, x, ldx, w, ldw, n0, n1, st, y, ldy);
  }
}

template <WeightType kT>
SDX_AVX512_FN void columns(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w, float alpha,
                           float beta, float* y, int64_t ldy, int64_t n0, int64_t n1) {
  const Store st{w.scale, alpha, beta};
  for (int64_t m = 0; m < M; m += 8) {
    const int R = static_cast<int>(std::min<int64_t>(8, M - m));
    row_group<kT>(R, K, x + m * ldx, ldx, w.data, w.ldw, n0, n1, st, y + m * ldy, ldy);
  }
}

// One row against two full 64-column blocks of packed W ([K, 64] each): four accumulators per block, eight
// FMA chains in all, as tile<kT, 1, 8> has on 128 contiguous columns (four alone wait on the FMA latency:
// an LSTM's R^T of 64 x 256 took 0.48 us a step in 64-column blocks). Each column's chain is unchanged.
template <WeightType kT>
SDX_AVX512_FN void row_pair(int64_t K, const float* x, const SmallMWeights& w0, const SmallMWeights& w1, float alpha,
                            float beta, float* y0, float* y1) {
  __m512 acc[8];
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) acc[v] = _mm512_setzero_ps();
  constexpr int64_t kElemBytes = kT == WeightType::kFloat32 ? 4 : kT == WeightType::kFloat16 ? 2 : 1;
  constexpr int64_t kLines = (64 * kElemBytes + 63) / 64;
  const char* b0 = static_cast<const char*>(w0.data);
  const char* b1 = static_cast<const char*>(w1.data);
  for (int64_t k = 0; k < K; ++k) {
    const int64_t off = k * 64;
    if (k + kPrefetchRows < K) {
#pragma GCC unroll 4
      for (int64_t l = 0; l < kLines; ++l) {
        _mm_prefetch(b0 + (off + kPrefetchRows * 64) * kElemBytes + 64 * l, _MM_HINT_T0);
        _mm_prefetch(b1 + (off + kPrefetchRows * 64) * kElemBytes + 64 * l, _MM_HINT_T0);
      }
    }
    const __m512 xk = _mm512_set1_ps(x[k]);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      acc[v] = _mm512_fmadd_ps(xk, load_w<kT>(w0.data, off + 16 * v), acc[v]);
      acc[4 + v] = _mm512_fmadd_ps(xk, load_w<kT>(w1.data, off + 16 * v), acc[4 + v]);
    }
  }
  const __m512 a = _mm512_set1_ps(alpha), b = _mm512_set1_ps(beta);
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) {
    const SmallMWeights& w = v < 4 ? w0 : w1;
    float* yp = (v < 4 ? y0 : y1) + 16 * (v % 4);
    __m512 s = acc[v];
    if (w.scale) s = _mm512_mul_ps(s, _mm512_loadu_ps(w.scale + 16 * (v % 4)));
    if (alpha != 1.f) s = _mm512_mul_ps(a, s);
    if (beta != 0.f) s = _mm512_fmadd_ps(b, _mm512_loadu_ps(yp), s);
    _mm512_storeu_ps(yp, s);
  }
}

}  // namespace

void small_m_gemm_columns_avx512(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w,
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

void small_m_gemm_row_pair_avx512(int64_t K, const float* x, const SmallMWeights& w0, const SmallMWeights& w1,
                                  float alpha, float beta, float* y0, float* y1) {
  switch (w0.type) {
    case WeightType::kFloat32:
      return row_pair<WeightType::kFloat32>(K, x, w0, w1, alpha, beta, y0, y1);
    case WeightType::kFloat16:
      return row_pair<WeightType::kFloat16>(K, x, w0, w1, alpha, beta, y0, y1);
    case WeightType::kInt8:
      return row_pair<WeightType::kInt8>(K, x, w0, w1, alpha, beta, y0, y1);
  }
}

}  // namespace sdx::cpu::detail
#endif
