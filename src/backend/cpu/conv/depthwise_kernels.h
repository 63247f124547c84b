// The inner loops of depthwise_conv.h, one instantiation per simd level (internal to conv/):
// depthwise_kernels_impl.h is compiled by depthwise_kernels_{scalar,avx2,avx512}.cc with each
// level's flags, and depthwise_conv.cc calls the active level's.
#pragma once

#include <cstdint>

namespace sdx::cpu {
class FusedActivation;
}

namespace sdx::cpu::dw {

// Channels per block of the blocked layout (channel_blocked.h's NCHW16c).
inline constexpr int64_t kBlock = 16;

// One depthwise convolution's 2-D geometry (1-D: H = OH = KH = 1).
//
// NCHW planes go through padded rows: padded row pr is input row pr - pad_t (zeros above and
// below the image); a padded row is `stride_w` phases of `phase_w` floats; phase q holds padded
// columns q, q + stride_w, ...; padded column j is input column j - pad_l (zero outside the
// image). So the run of tap kw for the output columns of one row is contiguous:
// tap_offset[kw] + [0, OW). Blocked planes (H x W pixels of kBlock channels) are read in place.
struct Geometry {
  int64_t H = 1, W = 1, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_t = 0, pad_l = 0;
  int64_t phase_w = 0;                  // floats per phase of a padded row
  const int64_t* tap_offset = nullptr;  // KW: where tap kw's run starts in a padded row
  int64_t row_floats() const { return stride_w * phase_w; }
  // One past the last padded row that output rows [.., oh1) read (they start at oh0 * stride_h).
  int64_t end_row(int64_t oh1) const { return (oh1 - 1) * stride_h + (KH - 1) * dil_h + 1; }
};

// Both loops compute, for each output element, bias + the sum over the taps in (kh, kw) order of
// w * x with one multiply-add each, then add the residual (if any) and apply the activation in
// registers when it has a lane form (activation.h's lanes(); they return true), else leave the
// activation to the caller (false). The NCHW loop sums padded zeros as taps; the blocked loop skips
// taps outside the image (the two differ at most in the sign of a zero, or where w is infinite).
struct Kernels {
  // Writes padded rows [pr0, pr1) of one input plane x (H x W) to out, pr1 - pr0 rows of
  // row_floats().
  void (*pad)(const Geometry& g, const float* x, int64_t pr0, int64_t pr1, float* out);
  // Output rows [oh0, oh1) of one NCHW plane y from padded rows starting at row pr0 (pad()'s
  // output); w: KH x KW; residual: the plane's residual or null.
  bool (*rows)(const Geometry& g, const float* padded, int64_t pr0, const float* w, float bias, float* y,
               int64_t oh0, int64_t oh1, const FusedActivation& act, const float* residual);
  // Output rows [oh0, oh1) of one blocked plane y (OH x OW pixels of kBlock channels) from the
  // blocked input plane x (H x W pixels); w: KH x KW x kBlock; bias: kBlock floats; residual: the
  // blocked residual plane or null.
  bool (*blocked_rows)(const Geometry& g, const float* x, const float* w, const float* bias, float* y, int64_t oh0,
                       int64_t oh1, const FusedActivation& act, const float* residual);
};

const Kernels* scalar_kernels();
const Kernels* avx2_kernels();    // null when not compiled for x86-64
const Kernels* avx512_kernels();  // null when not compiled for x86-64

}  // namespace sdx::cpu::dw
