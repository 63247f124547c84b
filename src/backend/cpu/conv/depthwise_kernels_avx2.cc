// The AVX2/FMA level of depthwise_kernels.h. CMakeLists.txt compiles this file with -mavx2 -mfma on
// x86-64; depthwise_conv.cc calls it only when simd::active_isa() is at least AVX2.
#include "backend/cpu/conv/depthwise_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/simd/vec_avx2.h"
#include "backend/cpu/conv/depthwise_kernels_impl.h"

namespace sdx::cpu::dw {

// Even and odd columns of 8 pairs: shuffle within 128-bit lanes, then put the lanes in order.
template <>
struct Split2<simd::Avx2Isa> {
  static int64_t run(const float* src, int64_t n, float* even, float* odd) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 a = _mm256_loadu_ps(src + 2 * i), b = _mm256_loadu_ps(src + 2 * i + 8);
      const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
      _mm256_storeu_ps(even + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
      _mm256_storeu_ps(odd + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xD8)));
    }
    return i;
  }
};

}  // namespace sdx::cpu::dw
#endif

namespace sdx::cpu::dw {

const Kernels* avx2_kernels() {
#if defined(__AVX2__) && defined(__FMA__)
  static constexpr Kernels kKernels = make_kernels<simd::Avx2Isa>();
  return &kKernels;
#else
  return nullptr;
#endif
}

}  // namespace sdx::cpu::dw
