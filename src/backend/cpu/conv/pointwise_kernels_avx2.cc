// The AVX2/FMA level of pointwise_kernels.h. CMakeLists.txt compiles this file with -mavx2 -mfma on
// x86-64; pointwise_conv.cc calls it only when simd::active_isa() is at least AVX2.
#include "backend/cpu/conv/pointwise_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/simd/vec_avx2.h"
#include "backend/cpu/conv/pointwise_kernels_impl.h"

namespace sdx::cpu::pw {

// 16 registers: 8 accumulators, 2 input vectors and the broadcast weight.
template <>
struct Tiles<simd::Avx2Isa> {
  static constexpr int kR = 4, kNV = 2;
};

}  // namespace sdx::cpu::pw
#endif

namespace sdx::cpu::pw {

const Kernels* avx2_kernels() {
#if defined(__AVX2__) && defined(__FMA__)
  static constexpr Kernels kKernels = make_kernels<simd::Avx2Isa>();
  return &kKernels;
#else
  return nullptr;
#endif
}

}  // namespace sdx::cpu::pw
