// The AVX-512F level of pointwise_kernels.h. CMakeLists.txt compiles this file with -mavx512f -mavx2
// -mfma on x86-64; pointwise_conv.cc calls it only when simd::active_isa() is AVX-512.
#include "backend/cpu/conv/pointwise_kernels.h"

#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/simd/vec_avx512.h"
#include "backend/cpu/conv/pointwise_kernels_impl.h"

namespace sdx::cpu::pw {

// 32 registers: 24 accumulators, 4 input vectors, the broadcast weight.
template <>
struct Tiles<simd::Avx512Isa> {
  static constexpr int kR = 6, kNV = 4;
};

}  // namespace sdx::cpu::pw
#endif

namespace sdx::cpu::pw {

const Kernels* avx512_kernels() {
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
  static constexpr Kernels kKernels = make_kernels<simd::Avx512Isa>();
  return &kKernels;
#else
  return nullptr;
#endif
}

}  // namespace sdx::cpu::pw
