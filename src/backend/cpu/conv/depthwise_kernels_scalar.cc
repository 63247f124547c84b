// The portable level of depthwise_kernels.h.
#include "backend/cpu/conv/depthwise_kernels.h"

#include "backend/cpu/simd/vec_scalar.h"
#include "backend/cpu/conv/depthwise_kernels_impl.h"

namespace sdx::cpu::dw {

const Kernels* scalar_kernels() {
  static constexpr Kernels kKernels = make_kernels<simd::ScalarIsa>();
  return &kKernels;
}

}  // namespace sdx::cpu::dw
