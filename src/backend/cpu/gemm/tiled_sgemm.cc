// The register-tiled float GEMM of tiled_sgemm.h: packing and blocking here, one micro-kernel per ISA
// (AVX-512F and AVX2+FMA, built by function attributes; the project compiles with plain -O2 and each
// kernel runs only after the CPU check).
#include "backend/cpu/gemm/tiled_sgemm.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "backend/cpu/simd/isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SDX_TILED_X86 1
#define SDX_AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#define SDX_AVX2_FN __attribute__((target("avx2,fma")))
#else
#define SDX_TILED_X86 0
#endif

namespace sdx::cpu {
namespace {

constexpr int64_t kKc = 256;  // rows of a packed op(B) panel (the k block)
constexpr int64_t kNc = 512;  // columns of a packed op(B) panel: kKc x kNc floats = 512 KiB, in L2

// C tile = alpha * acc, or fma(beta, C, alpha * acc) when beta != 0, on the first k block (C unread when
// beta == 0); C = fma(alpha, acc, C) on later blocks. Written as explicit FMAs so that no compiler
// contraction can make the two kernels differ. rows x cols of the MR x NR tile are stored.
// op(A)'s rows are read in place: row r's element k at a[r][k * ks] (ks = 1, or lda when A is transposed);
// rows past `rows` point at the last real row (computed, never stored), so nothing of A is copied.
using MicroKernel = void (*)(int64_t kc, const float* const* a, int64_t ks, const float* bp, float* C, int64_t ldc,
                             int64_t rows, int64_t cols, float alpha, float beta, bool first);
// Packs one strip of a transposed B (see pack_b).
using PackTransposed = void (*)(const float* src, int64_t ldb, int64_t kc, int64_t cols, float* dst);

#if SDX_TILED_X86
// AVX-512: 8 rows x 32 columns (two vectors), 16 accumulators.
SDX_AVX512_FN void kernel_avx512(int64_t kc, const float* const* a, int64_t ks, const float* bp, float* C,
                                 int64_t ldc, int64_t rows, int64_t cols, float alpha, float beta, bool first) {
  constexpr int kMr = 8;
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
  for (int64_t k = 0, off = 0; k < kc; ++k, off += ks) {
    const __m512 b0 = _mm512_loadu_ps(bp + k * 32), b1 = _mm512_loadu_ps(bp + k * 32 + 16);
    const float av[kMr] = {a0[off], a1[off], a2[off], a3[off], a4[off], a5[off], a6[off], a7[off]};
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      const __m512 ar = _mm512_set1_ps(av[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols > 16 ? __mmask16((1u << (cols - 16)) - 1) : __mmask16(0);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    if (r >= rows) break;
    float* c = C + r * ldc;
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __mmask16 m = h == 0 ? m0 : m1;
      if (!m) continue;
      __m512 v;
      if (!first)
        v = _mm512_fmadd_ps(va, acc[r][h], _mm512_maskz_loadu_ps(m, c + 16 * h));
      else if (beta != 0.f)
        v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, c + 16 * h), _mm512_mul_ps(va, acc[r][h]));
      else
        v = _mm512_mul_ps(va, acc[r][h]);
      _mm512_mask_storeu_ps(c + 16 * h, m, v);
    }
  }
}

SDX_AVX2_FN inline __m256i lanes(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// AVX2: 6 rows x 16 columns (two vectors), 12 accumulators.
SDX_AVX2_FN void kernel_avx2(int64_t kc, const float* const* a, int64_t ks, const float* bp, float* C, int64_t ldc,
                             int64_t rows, int64_t cols, float alpha, float beta, bool first) {
  constexpr int kMr = 6;
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  for (int64_t k = 0, off = 0; k < kc; ++k, off += ks) {
    const __m256 b0 = _mm256_loadu_ps(bp + k * 16), b1 = _mm256_loadu_ps(bp + k * 16 + 8);
    const float* av[kMr] = {a0 + off, a1 + off, a2 + off, a3 + off, a4 + off, a5 + off};
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 ar = _mm256_broadcast_ss(av[r]);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  const bool full = cols >= 16;
  const __m256i m0 = lanes(cols), m1 = lanes(cols - 8);
  for (int r = 0; r < kMr && r < rows; ++r) {
    float* c = C + r * ldc;
    for (int h = 0; h < 2; ++h) {
      if (8 * h >= cols) break;
      const __m256i m = h == 0 ? m0 : m1;
      const __m256 old = first && beta == 0.f ? _mm256_setzero_ps()
                         : full                   ? _mm256_loadu_ps(c + 8 * h)
                                                  : _mm256_maskload_ps(c + 8 * h, m);
      __m256 v;
      if (!first)
        v = _mm256_fmadd_ps(va, acc[r][h], old);
      else if (beta != 0.f)
        v = _mm256_fmadd_ps(vb, old, _mm256_mul_ps(va, acc[r][h]));
      else
        v = _mm256_mul_ps(va, acc[r][h]);
      if (full)
        _mm256_storeu_ps(c + 8 * h, v);
      else
        _mm256_maskstore_ps(c + 8 * h, m, v);
    }
  }
}

// One strip of a transposed B (op(B)[k][j] = B[j][k], `cols` <= NR rows of B from src): dst[k * NR + j] by
// gathers along j, columns past `cols` zero. Scalar loads and stores cost ~7 cycles an element here.
SDX_AVX512_FN void pack_bt_strip_avx512(const float* src, int64_t ldb, int64_t kc, int64_t cols, float* dst) {
  const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(static_cast<int>(ldb)));
  const __m512i idx_hi = _mm512_add_epi32(idx, _mm512_set1_epi32(static_cast<int>(16 * ldb)));
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols > 16 ? __mmask16((1u << (cols - 16)) - 1) : __mmask16(0);
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    _mm512_storeu_ps(dst + k * 32, _mm512_mask_i32gather_ps(zero, m0, idx, src + k, 4));
    _mm512_storeu_ps(dst + k * 32 + 16, m1 ? _mm512_mask_i32gather_ps(zero, m1, idx_hi, src + k, 4) : zero);
  }
}

SDX_AVX2_FN void pack_bt_strip_avx2(const float* src, int64_t ldb, int64_t kc, int64_t cols, float* dst) {
  const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32(static_cast<int>(ldb)));
  const __m256i idx_hi = _mm256_add_epi32(idx, _mm256_set1_epi32(static_cast<int>(8 * ldb)));
  const __m256 m0 = _mm256_castsi256_ps(lanes(cols)), m1 = _mm256_castsi256_ps(lanes(cols - 8));
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    _mm256_storeu_ps(dst + k * 16, _mm256_mask_i32gather_ps(zero, src + k, idx, m0, 4));
    _mm256_storeu_ps(dst + k * 16 + 8, _mm256_mask_i32gather_ps(zero, src + k, idx_hi, m1, 4));
  }
}
#endif

// op(B)[k0:k0+kc, n0:n0+nc] as strips of NR columns: strip s holds [k][j] at dst + s * kc * NR + k * NR + j,
// columns past nc zero.
template <int64_t NR>
void pack_b(bool trans_b, PackTransposed pack_bt, const float* B, int64_t ldb, int64_t k0, int64_t kc, int64_t n0,
            int64_t nc, float* dst) {
  for (int64_t s0 = 0; s0 < nc; s0 += NR, dst += kc * NR) {
    const int64_t cols = std::min(NR, nc - s0);
    if (!trans_b) {
      const float* src = B + k0 * ldb + n0 + s0;
      if (cols == NR) {  // a fixed-size copy the compiler unrolls into vector moves
        for (int64_t k = 0; k < kc; ++k) std::memcpy(dst + k * NR, src + k * ldb, NR * sizeof(float));
      } else {
        for (int64_t k = 0; k < kc; ++k) {
          std::memcpy(dst + k * NR, src + k * ldb, static_cast<size_t>(cols) * sizeof(float));
          std::fill(dst + k * NR + cols, dst + (k + 1) * NR, 0.f);
        }
      }
    } else if (pack_bt) {
      pack_bt(B + (n0 + s0) * ldb + k0, ldb, kc, cols, dst);
    } else {  // op(B)[k][n] = B[n][k]: contiguous stores, loads from `cols` rows that stay in L1 across k
      const float* src = B + (n0 + s0) * ldb + k0;
      for (int64_t k = 0; k < kc; ++k) {
        float* d = dst + k * NR;
        for (int64_t j = 0; j < cols; ++j) d[j] = src[j * ldb + k];
        for (int64_t j = cols; j < NR; ++j) d[j] = 0.f;
      }
    }
  }
}

// The calling thread's packing buffer, 64-byte aligned, grown to the largest request and kept.
float* packing_buffer(int64_t floats) {
  struct Buffer {
    std::unique_ptr<float[]> mem;
    int64_t capacity = 0;
  };
  thread_local Buffer buf;
  constexpr int64_t kAlign = 16;  // floats per 64 bytes
  if (buf.capacity < floats) {
    buf.mem = std::make_unique<float[]>(static_cast<size_t>(floats + kAlign));
    buf.capacity = floats;
  }
  const auto addr = reinterpret_cast<uintptr_t>(buf.mem.get());
  return reinterpret_cast<float*>((addr + 63) & ~uintptr_t{63});
}

template <int64_t MR, int64_t NR>
void tiled(MicroKernel kernel, PackTransposed pack_bt, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.f) {  // C = beta * C (C unread when beta == 0)
    for (int64_t i = 0; i < M; ++i) {
      float* c = C + i * ldc;
      if (beta == 0.f)
        std::fill(c, c + N, 0.f);
      else if (beta != 1.f)
        for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
    return;
  }
  const int64_t panel_cols = (std::min(N, kNc) + NR - 1) / NR * NR;
  const int64_t b_floats = std::min(K, kKc) * panel_cols;
  float* const bpack = packing_buffer(b_floats);
  const int64_t ks = trans_a ? lda : 1;
  for (int64_t n0 = 0; n0 < N; n0 += kNc) {
    const int64_t nc = std::min(kNc, N - n0);
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      const int64_t kc = std::min(kKc, K - k0);
      pack_b<NR>(trans_b, pack_bt, B, ldb, k0, kc, n0, nc, bpack);
      for (int64_t i = 0; i < M; i += MR) {
        const int64_t rows = std::min(MR, M - i);
        const float* a[MR];
        for (int64_t r = 0; r < MR; ++r) {
          const int64_t row = i + std::min(r, rows - 1);
          a[r] = trans_a ? A + k0 * lda + row : A + row * lda + k0;
        }
        for (int64_t s0 = 0; s0 < nc; s0 += NR)
          kernel(kc, a, ks, bpack + (s0 / NR) * kc * NR, C + i * ldc + n0 + s0, ldc, rows, std::min(NR, nc - s0),
                 alpha, beta, k0 == 0);
      }
    }
  }
}

}  // namespace

namespace detail {

// The CPU check of simd/isa.h (AVX2 with FMA; AVX-512F on top), not a second one.
bool tiled_isa_supported(TiledIsa isa) {
  const simd::Isa detected = simd::detected_isa();
  return isa == TiledIsa::kAvx512 ? detected == simd::Isa::kAvx512 : detected != simd::Isa::kScalar;
}

void tiled_sgemm_with(TiledIsa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
#if SDX_TILED_X86
  // Gather offsets are 32-bit: (NR - 1) * ldb elements must fit.
  const bool gathers = ldb <= (int64_t{1} << 24);
  if (isa == TiledIsa::kAvx512)
    tiled<8, 32>(kernel_avx512, gathers ? pack_bt_strip_avx512 : nullptr, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else
    tiled<6, 16>(kernel_avx2, gathers ? pack_bt_strip_avx2 : nullptr, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  (void)isa, (void)trans_a, (void)trans_b, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B,
      (void)ldb, (void)beta, (void)C, (void)ldc;
#endif
}

}  // namespace detail

namespace {
// The kernel of the session's ISA (simd::active_isa(), never above the detected one; SDX_CPU_ISA can lower it).
detail::TiledIsa active_tiled_isa() {
  return simd::active_isa() == simd::Isa::kAvx512 ? detail::TiledIsa::kAvx512 : detail::TiledIsa::kAvx2;
}
}  // namespace

bool tiled_sgemm_available() { return SDX_TILED_X86 && simd::active_isa() != simd::Isa::kScalar; }

int64_t tiled_sgemm_strip() { return active_tiled_isa() == detail::TiledIsa::kAvx512 ? 32 : 16; }

void tiled_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  detail::tiled_sgemm_with(active_tiled_isa(), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace sdx::cpu
