// The AVX2 + FMA level. CMakeLists.txt compiles this file with -mavx2 -mfma -mf16c on x86-64;
// isa.cc calls it only on CPUs that have both.
#include "backend/cpu/simd/kernel_table.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/simd/vec_avx2.h"
#include "backend/cpu/simd/kernels_impl.h"
#endif

namespace sdx::cpu::simd {

const KernelTable* avx2_table() {
#if defined(__AVX2__) && defined(__FMA__)
  static constexpr KernelTable kTable = make_table<Avx2Isa>();
  return &kTable;
#else
  return nullptr;
#endif
}

}  // namespace sdx::cpu::simd
