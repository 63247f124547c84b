// The loop of one level of lane_rows.h, over an ISA type S of simd/vec_*.h (internal to
// kernels/util/; included by lane_rows_avx2.cc and lane_rows_avx512.cc only).
#pragma once

#include <cstdint>

#include "backend/cpu/kernels/util/lane_rows.h"

namespace sdx::cpu::lanes {

// Every element takes the same vector code (the tail through masked loads and stores), so its bits
// do not depend on where a row is cut. f.lanes does per lane what f's operator() does.
template <class S, class F>
void row(const F& f, const float* x, float* y, int64_t n, const float* b, int64_t b_step) {
  using V = typename S::F;
  constexpr int64_t L = S::kLanes;
  const V b0 = S::set1(b && b_step == 0 ? b[0] : 0.f);
  auto apply = [&](V v, int64_t i, int64_t m) {
    if (b) v = S::add(v, b_step == 0 ? b0 : m == L ? S::load(b + i) : S::load_partial(b + i, m));
    v.v = f.lanes(v.v);
    return v;
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) S::store(y + i, apply(S::load(x + i), i, L));
  if (i < n) S::store_partial(y + i, apply(S::load_partial(x + i, n - i), i, n - i), n - i);
}

}  // namespace sdx::cpu::lanes
