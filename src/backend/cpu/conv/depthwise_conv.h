// Depthwise convolution, float32: every output channel reads exactly one input channel (Conv with
// group == C >= 2; M may be a small multiple of C, a "channel multiplier"), 1-D or 2-D, any kernel size,
// strides, dilations and pads. The layers of mobile CNNs (MobileNet, PP-LCNet, the OCR and
// detection models of bench/zoo.toml) that oneDNN 2.6 runs only on its generic gemm path on NCHW
// (its jit depthwise kernels need channel-blocked tensors on both sides): 20-50x faster than that.
//
//   std::unique_ptr<DepthwiseConv> c = DepthwiseConv::make(plan, act, layouts);  // null: not ours
//   c->set_constant_weights(w);   // optional: constant W prepared once
//   c->run(x, w, b, r, y);
//
// Two layouts, chosen by the tensors' (ConvLayouts, channel_blocked.h):
// - NCHW: per output plane (or band of its rows, so that small batches still split across the
//   pool), the input rows it reads are copied once into zero-padded rows whose columns are split
//   by phase (column mod stride), so that every tap reads a contiguous run at any stride; each
//   output row is then a sum over the taps of scalar weight x vector of inputs, accumulated in
//   registers and stored once. W is read in place. A convolution over columns of width 1 (kernel
//   k x 1 on an H x 1 plane: filters over time) runs as a 1-D one along H.
// - NCHW16c, when ConvLayoutOptimizations made X, Y or R channel-blocked (16-channel multiples,
//   2-D, no channel multiplier): a vector is one pixel's 16 channels, read in place, and W is
//   reordered to [C/16][kh][kw][16]. A tensor of the other layout is converted around the call.
// The inner loops are the simd level's of simd/isa.h (AVX-512, AVX2 or scalar;
// depthwise_kernels.h). The residual (FusedConv's R) and activations with a lane form (Relu,
// LeakyRelu, Clip, HardSigmoid, HardSwish) are applied in registers before the store; the others
// (Sigmoid, Tanh, Gelu, Swish) run on each finished band of rows while it is in cache.
//
// Arithmetic: out = bias + sum over taps in (kh, kw) order of w * x, one multiply-add per tap (one
// multiply and one add at the scalar level), the same for every element wherever its vector starts
// and whatever the thread count. Conv and sdx.FusedConv both take this path, so FusedConv equals
// Conv + activation (and Conv + Add + activation) bit for bit in either layout. The NCHW path
// counts padding as zero taps and the blocked one skips them, so the two layouts can differ in the
// sign of a zero result, and where a weight is infinite.
#pragma once

#include <memory>
#include <optional>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/kernel.h"

namespace sdx::cpu {

// Output channels per input channel the kernel takes (a larger multiplier re-reads every input
// row that many times: im2col + gemm is better there).
inline constexpr int64_t kMaxMultiplier = 4;

// True for a 1-D or 2-D convolution of at least two groups of one input channel each (Cg == 1),
// at most kMaxMultiplier output channels per group, non-negative pads and a non-empty output.
bool depthwise_conv_applies(const ConvPlan& p);

class DepthwiseConv {
 public:
  // Null unless depthwise_conv_applies(p), and, with a channel-blocked tensor, unless the
  // convolution is 2-D without a channel multiplier on 16-channel multiples. Picks the simd level
  // active now. has_residual: run() gets a residual (its buffers are made now).
  static std::unique_ptr<DepthwiseConv> make(const ConvPlan& p, const FusedActivation& act, ConvLayouts layouts = {},
                                             bool has_residual = false);
  ~DepthwiseConv();
  DepthwiseConv(const DepthwiseConv&) = delete;
  DepthwiseConv& operator=(const DepthwiseConv&) = delete;

  // W ([M, 1, k...]) will not change: run() uses this preparation of it and ignores its w.
  void set_constant_weights(const float* w);

  // y = act((conv(x, w) + b) + r) over tensors of the plan's shapes in make()'s layouts; b: M floats
  // or null; r: the output's size (given iff make() had has_residual; must not overlap y), or null. Splits across the calling thread's
  // pool. One DepthwiseConv must not run on two threads at once (it owns its buffers).
  void run(const float* x, const float* w, const float* b, const float* r, float* y);

  // Grows the calling thread's conv scratch to what run() on this thread's pool needs, so that a bound
  // form's first run on the thread that bound it allocates nothing (a worker grows its own on its first item).
  void reserve_thread_scratch() const;

  bool blocked() const;  // tests: whether it runs the NCHW16c loops

 private:
  struct Impl;
  explicit DepthwiseConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The run() of Conv / sdx.FusedConv on this kernel (y allocated with p.out_shape): its status, or
// nullopt, with nothing written, when it does not take the case (not all float32, or make()
// declines). r: the residual (FusedConv) or null.
std::optional<Status> run_depthwise_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x,
                                         const Tensor& w, const Tensor* b, Tensor& y, const Tensor* r = nullptr,
                                         ConvLayouts layouts = {});
// Their prepare(): the bound call over ctx's buffers (X, W, B?, R? at inputs 0, 1, 2, 3; the caller
// has checked types and shapes and output 0), or null. Constant weights are prepared here, once.
std::unique_ptr<backend::BoundKernel> bind_depthwise_conv(const ConvPlan& p, const FusedActivation& act,
                                                          const backend::PrepareContext& ctx,
                                                          ConvLayouts layouts = {});

}  // namespace sdx::cpu
