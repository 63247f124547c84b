// The AVX-512F level of depthwise_kernels.h. CMakeLists.txt compiles this file with -mavx512f -mavx2
// -mfma on x86-64; depthwise_conv.cc calls it only when simd::active_isa() is AVX-512.
#include "backend/cpu/conv/depthwise_kernels.h"

#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/simd/vec_avx512.h"
#include "backend/cpu/conv/depthwise_kernels_impl.h"

namespace sdx::cpu::dw {

// Even and odd columns of 16 pairs: one two-source permute each.
template <>
struct Split2<simd::Avx512Isa> {
  static int64_t run(const float* src, int64_t n, float* even, float* odd) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const __m512 a = _mm512_loadu_ps(src + 2 * i), b = _mm512_loadu_ps(src + 2 * i + 16);
      _mm512_storeu_ps(even + i, _mm512_permutex2var_ps(a, ie, b));
      _mm512_storeu_ps(odd + i, _mm512_permutex2var_ps(a, io, b));
    }
    return i;
  }
};

}  // namespace sdx::cpu::dw
#endif

namespace sdx::cpu::dw {

const Kernels* avx512_kernels() {
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
  static constexpr Kernels kKernels = make_kernels<simd::Avx512Isa>();
  return &kKernels;
#else
  return nullptr;
#endif
}

}  // namespace sdx::cpu::dw
