// wide_lane_row (activation.h): the active level's row of lane_rows.h.
#include "backend/cpu/kernels/util/lane_rows.h"

#include "backend/cpu/simd/isa.h"

namespace sdx::cpu {

template <class F>
bool wide_lane_row(const F& f, const float* x, float* y, int64_t n, const float* b, int64_t b_step) {
  if (b && b_step != 0 && b_step != 1) return false;
  // Read on every call: tests lower the level for a scope (simd::ScopedIsa).
  lanes::RowFn<F> fn = nullptr;
  switch (simd::active_isa()) {
    case simd::Isa::kAvx512: fn = lanes::avx512_row<F>(); break;
    case simd::Isa::kAvx2: fn = lanes::avx2_row<F>(); break;
    case simd::Isa::kScalar: break;
  }
  if (!fn) return false;
  fn(f, x, y, n, b, b_step);
  return true;
}

#define SDX_WIDE_LANE_ROW_INSTANCE(F) \
  template bool wide_lane_row<F>(const F&, const float*, float*, int64_t, const float*, int64_t);
SDX_WIDE_LANE_FUNCTORS(SDX_WIDE_LANE_ROW_INSTANCE)
#undef SDX_WIDE_LANE_ROW_INSTANCE

}  // namespace sdx::cpu
