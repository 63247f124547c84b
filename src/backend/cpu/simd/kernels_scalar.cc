// The portable level: one-lane vectors, compiled with the project's baseline flags.
#include "backend/cpu/simd/vec_scalar.h"
#include "backend/cpu/simd/kernels_impl.h"

namespace sdx::cpu::simd {

const KernelTable* scalar_table() {
  static constexpr KernelTable kTable = make_table<ScalarIsa>();
  return &kTable;
}

}  // namespace sdx::cpu::simd
