// dot_rows (see dot_rows.h): the portable loop spelling out the arithmetic, and the AVX2/FMA one (built
// for those extensions by a function attribute, called only when the CPU has them).
#include "backend/cpu/gemm/dot_rows.h"

#include <cmath>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace sdx::cpu {
namespace detail {

void dot_rows_portable(const float* x, const float* rows, int64_t ld, int64_t n, int64_t d, float alpha, float* y) {
  const int64_t d8 = d / 8 * 8;
  for (int64_t j = 0; j < n; ++j) {
    const float* r = rows + j * ld;
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t k = 0; k < d8; k += 8)
      for (int l = 0; l < 8; ++l) a[l] = std::fma(x[k + l], r[k + l], a[l]);
    float s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
    for (int64_t k = d8; k < d; ++k) s = std::fma(x[k], r[k], s);
    y[j] = alpha * s;
  }
}

#if defined(__x86_64__) || defined(__i386__)
namespace {
#define SDX_DOT_ROWS_AVX2 __attribute__((target("avx2,fma")))

// ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), then the tail [d8, d) by fma, times alpha.
SDX_DOT_ROWS_AVX2 inline float finish(__m256 a, const float* x, const float* r, int64_t d8, int64_t d, float alpha) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));  // a_l + a_(l+4)
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));                                // (0+4)+(2+6), (1+5)+(3+7)
  float s = _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
  for (int64_t k = d8; k < d; ++k) s = std::fma(x[k], r[k], s);
  return alpha * s;
}

SDX_DOT_ROWS_AVX2 void dot_rows_avx2(const float* x, const float* rows, int64_t ld, int64_t n, int64_t d, float alpha,
                                     float* y) {
  const int64_t d8 = d / 8 * 8;
  int64_t j = 0;
  // Two rows at a time share each load of x.
  for (; j + 2 <= n; j += 2) {
    const float* r0 = rows + j * ld;
    const float* r1 = r0 + ld;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int64_t k = 0; k < d8; k += 8) {
      const __m256 xv = _mm256_loadu_ps(x + k);
      a0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r0 + k), a0);
      a1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r1 + k), a1);
    }
    y[j] = finish(a0, x, r0, d8, d, alpha);
    y[j + 1] = finish(a1, x, r1, d8, d, alpha);
  }
  if (j < n) {
    const float* r = rows + j * ld;
    __m256 a = _mm256_setzero_ps();
    for (int64_t k = 0; k < d8; k += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(r + k), a);
    y[j] = finish(a, x, r, d8, d, alpha);
  }
}
}  // namespace
#endif

bool dot_rows_vectorized() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool kHas = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return kHas;
#else
  return false;
#endif
}

}  // namespace detail

void dot_rows(const float* x, const float* rows, int64_t ld, int64_t n, int64_t d, float alpha, float* y) {
#if defined(__x86_64__) || defined(__i386__)
  if (detail::dot_rows_vectorized()) return detail::dot_rows_avx2(x, rows, ld, n, d, alpha, y);
#endif
  detail::dot_rows_portable(x, rows, ld, n, d, alpha, y);
}

}  // namespace sdx::cpu
