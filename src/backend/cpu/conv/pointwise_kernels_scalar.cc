// The portable level of pointwise_kernels.h.
#include "backend/cpu/conv/pointwise_kernels.h"

#include "backend/cpu/simd/vec_scalar.h"
#include "backend/cpu/conv/pointwise_kernels_impl.h"

namespace sdx::cpu::pw {

template <>
struct Tiles<simd::ScalarIsa> {
  static constexpr int kR = 4, kNV = 4;
};

const Kernels* scalar_kernels() {
  static constexpr Kernels kKernels = make_kernels<simd::ScalarIsa>();
  return &kKernels;
}

}  // namespace sdx::cpu::pw
