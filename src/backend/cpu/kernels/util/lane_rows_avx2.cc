// The AVX2 level of lane_rows.h. CMakeLists.txt compiles this file with -mavx2 -mfma
// -ffp-contract=off on x86-64; wide_lane_row (lane_rows.cc) calls it only when simd::active_isa()
// is AVX2.
#include "backend/cpu/kernels/util/lane_rows.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/simd/vec_avx2.h"
#include "backend/cpu/kernels/util/lane_rows_impl.h"
#endif

namespace sdx::cpu::lanes {

template <class F>
RowFn<F> avx2_row() {
#if defined(__AVX2__) && defined(__FMA__)
  return &row<simd::Avx2Isa, F>;
#else
  return nullptr;
#endif
}

#define SDX_LANE_ROW_INSTANCE(F) template RowFn<F> avx2_row<F>();
SDX_WIDE_LANE_FUNCTORS(SDX_LANE_ROW_INSTANCE)
#undef SDX_LANE_ROW_INSTANCE

}  // namespace sdx::cpu::lanes
