// The per-level instantiations behind wide_lane_row (activation.h): y = f(x + b) with a lane functor
// (activation.h: Relu, LeakyRelu, Clip, HardSigmoid, HardSwish, the clamped forms, no activation) on
// the CPU's full vector width: 8 lanes on AVX2, 16 on AVX-512, where lane_map (float_row.h) has 4.
// lane_rows_impl.h is compiled once per level by lane_rows_{avx2,avx512}.cc with that level's flags
// and -ffp-contract=off, so that a * x + b rounds twice as in the baseline build and every lane gets
// the bits of the functor's operator() (FusedConv equals Conv + activation bit for bit).
// Internal to kernels/util/: everything else calls wide_lane_row.
#pragma once

#include <cstdint>

#include "backend/cpu/kernels/util/activation.h"

namespace sdx::cpu::lanes {

// y[i] = f(x[i] + bias) for i < n; bias: none (b null), b[0] (b_step 0) or b[i] (b_step 1). y may be x.
template <class F>
using RowFn = void (*)(const F& f, const float* x, float* y, int64_t n, const float* b, int64_t b_step);

// The level's row for F, null where this build has no such level. Instantiated for every functor of
// SDX_WIDE_LANE_FUNCTORS.
template <class F>
RowFn<F> avx2_row();
template <class F>
RowFn<F> avx512_row();

}  // namespace sdx::cpu::lanes
