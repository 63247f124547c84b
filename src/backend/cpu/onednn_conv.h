// 2-D float32 convolution on oneDNN, for the Conv and sdx.FusedConv kernels (kernels/nn_conv.cc,
// kernels/fused_conv.cc). Everything else (1-D/3-D, other element types, shapes oneDNN declines)
// stays on the reference im2col + gemm of conv_gemm.h.
//
//   std::unique_ptr<OneDnnConv> c = OneDnnConv::make(plan, act, has_bias);   // null: use the reference
//   c->pack_weights(w);          // once for constant weights (prepare), else before every run
//   c->run(x, bias, y);          // NCHW in, NCHW out
//
// Layout: oneDNN's direct convolutions are fastest on channel-blocked tensors (nChw16c on AVX-512),
// its NCHW path is im2col + gemm. So run() reorders X into a blocked buffer (the first layer, with
// a handful of input channels, reads NCHW directly), convolves into a blocked buffer and reorders
// the result back to NCHW, per slice of output channels, while the slice is in cache. Weights are
// reordered once into oneDNN's preferred layout (format_tag::any) by pack_weights().
//
// Threading (see onednn.h): the output channels are cut into one slice per thread of the calling
// thread's pool at make() time (block-aligned); each slice has its own single-threaded primitive
// and packed weights, and the slices run as one cpu::parallel_for. The arithmetic of an output
// element does not depend on the slicing, but make() and run() must see the same pool size for the
// bound form to repeat run() bit for bit (they do: both run under the session's pool).
//
// Epilogue: bias is oneDNN's bias argument; Relu and LeakyRelu are oneDNN eltwise post-ops chosen
// to give the bits of sdx's functors (see append_post_op); every other activation (Clip included,
// for its NaN and -0 behaviour) runs with sdx's own functor (activation.h) on each NCHW slice right
// after its reorder, while it is in cache, so FusedConv equals Conv + activation bit for bit.
//
// Scratch: the blocked buffers and each primitive's scratchpad (scratchpad_mode::user) are
// allocated once in make(). oneDNN's execute still makes small heap allocations of its own on each
// call (its argument map, ~30 per primitive: measured in tests/backend/cpu/onednn_conv_test.cc).
// One OneDnnConv must not run on two threads at once (it owns its buffers), like any bound call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "backend/cpu/activation.h"
#include "backend/cpu/conv_gemm.h"
#include "backend/kernel.h"

namespace sdx::cpu {

class OneDnnConv {
 public:
  // Null when oneDNN is not built in or switched off, or when it does not take this case (not 2-D,
  // an empty output). The pool size of the calling thread decides the slicing.
  static std::unique_ptr<OneDnnConv> make(const ConvPlan& p, const FusedActivation& act, bool has_bias);
  ~OneDnnConv();
  OneDnnConv(const OneDnnConv&) = delete;
  OneDnnConv& operator=(const OneDnnConv&) = delete;

  // Reorders W ([M, C/group, kh, kw], NCHW order) into the primitives' weight buffers.
  Status pack_weights(const float* w) const;
  // y = act(conv(x, w) + bias) with the weights of the last pack_weights(). bias: M floats or null
  // (must be given iff make() had has_bias). Fails only if a oneDNN primitive does.
  Status run(const float* x, const float* bias, float* y) const;

  // Output-channel slices (tests).
  int num_slices() const;

 private:
  struct Impl;
  explicit OneDnnConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The run() of Conv / sdx.FusedConv on oneDNN (y allocated with p.out_shape): its status, or
// nullopt, with nothing written, when it does not take the case (not all float32, or
// OneDnnConv::make declines). Packs the weights on every call.
std::optional<Status> run_onednn_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x,
                                      const Tensor& w, const Tensor* b, Tensor& y);
// Their prepare(): the bound call on oneDNN over ctx's buffers (X, W, B? at inputs 0, 1, 2; the
// caller has checked types and output 0), or null. Constant weights are packed here, once.
std::unique_ptr<backend::BoundKernel> bind_onednn_conv(const ConvPlan& p, const FusedActivation& act,
                                                       const backend::PrepareContext& ctx);

}  // namespace sdx::cpu
