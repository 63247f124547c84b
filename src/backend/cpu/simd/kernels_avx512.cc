// The AVX-512F level (with AVX2 + FMA). CMakeLists.txt compiles this file with -mavx512f
// -mavx2 -mfma -mf16c on x86-64; isa.cc calls it only on CPUs that have them.
#include "backend/cpu/simd/kernel_table.h"

#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/simd/vec_avx512.h"
#include "backend/cpu/simd/kernels_impl.h"
#endif

namespace sdx::cpu::simd {

const KernelTable* avx512_table() {
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
  static constexpr KernelTable kTable = make_table<Avx512Isa>();
  return &kTable;
#else
  return nullptr;
#endif
}

}  // namespace sdx::cpu::simd
