// 2-D (and 1-D of at least 2^20 multiply-adds, as 1 x W planes) float32 convolution on oneDNN, for the
// Conv and sdx.FusedConv kernels (kernels/nn_conv.cc, kernels/fused_conv.cc). Everything else (3-D,
// other element types, shapes oneDNN declines) stays on the reference im2col + gemm of conv_gemm.h.
//
//   std::unique_ptr<OneDnnConv> c = OneDnnConv::make(plan, act, has_bias);   // null: use the reference
//   c->pack_weights(w);          // once for constant weights (prepare), else before every run
//   c->run(x, bias, y);          // NCHW in, NCHW out (make(plan, act, has_bias, true): run(x, bias, y, r))
//
// Layout: oneDNN's direct convolutions are fastest on channel-blocked tensors (nChw16c on AVX-512),
// its NCHW path is im2col + gemm. So run() reorders X into a blocked buffer (the first layer, with
// a handful of input channels, reads NCHW directly), convolves into a blocked buffer and reorders
// the result back to NCHW, per slice of output channels, while the slice is in cache. Weights are
// reordered once into oneDNN's preferred layout (format_tag::any) by pack_weights(). Where
// ConvLayoutOptimizations has made X, Y or R channel-blocked (NCHW16c, channel_blocked.h), those
// reorders disappear: the convolution reads X and writes Y in place when they are in its layout
// (by output channels; by rows every slice still copies its rows into and out of its own buffers).
//
// Winograd: 3x3, stride 1, undilated, ungrouped convolutions of 16-channel multiples (ResNet's and
// VGG's 3x3 layers) run oneDNN's Winograd kernels (F(2x2,3x3) or F(4x4,3x3), its choice) on nChw16c,
// 1.5-3x faster than the direct ones on this machine (bench/README.md "Convolution"); results
// differ from the direct kernels' by rounding (~1e-6 relative), not bit for bit. Kill switch:
// SDX_NO_WINOGRAD=1 (or set_winograd_enabled(false) in tests).
//
// Threading (see onednn.h): the output channels are cut into one slice per thread of the calling
// thread's pool at make() time (block-aligned); each slice has its own single-threaded primitive
// and packed weights, and the slices run as one cpu::parallel_for. With the direct kernels the
// arithmetic of an output element does not depend on the slicing; with Winograd it does (oneDNN
// blocks the transformed-domain products by the slice's channel count), so results then depend on
// the pool size. make() and run() must see the same pool size for the bound form to repeat run()
// bit for bit (they do: both run under the session's pool).
//
// Epilogue: bias is oneDNN's bias argument; LeakyRelu (alpha > 0) is a oneDNN eltwise post-op
// chosen to give the bits of sdx's functor (see append_exact_post_op in onednn_util.h) on the direct
// kernels (under Winograd a post-op changes the kernel oneDNN picks, and with it the bits); every
// other activation (Relu and Clip included: oneDNN's turn NaN into numbers) runs with sdx's own
// functor (activation.h) on each slice right after its convolution, while it is in cache, so
// FusedConv equals Conv + activation bit for bit.
// A residual R (FusedConv's 4th input) is added the same way, y = act((conv + bias) + R), with the
// activation after it in sdx, on each slice while it is in cache: on Y after its reorder, or on the
// convolution's output before it when R has that layout and Y does not; R is reordered into a
// buffer of the right layout when neither matches (by rows: always, next to the slice's output).
// Not oneDNN's `sum` post-op: its direct kernels add the old dst at the first input-channel block,
// before the bias and the other blocks' partial sums ((p1 + R) + bias + p2 ...), which rounds
// differently from Conv + Add; binary post-ops would need R in the blocked layout too, the same
// memory traffic as this pass over a slice that is still in cache.
//
// Scratch: the blocked (and residual) buffers are allocated once in make(). The primitives'
// scratchpads (scratchpad_mode::user; Winograd's are megabytes) are one buffer per executing thread,
// shared by every convolution and grown to the largest one made so far on the thread's first call
// after it was made: no steady-state call allocates. oneDNN's execute still makes small heap
// allocations of its own on each call (its argument map, ~30 per primitive: measured in
// tests/backend/cpu/onednn/onednn_conv_test.cc). One OneDnnConv must not run on two threads at once (it
// owns its buffers), like any bound call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/kernel.h"
#include "backend/packed_weights.h"

namespace sdx::cpu {

class OneDnnConv {
 public:
  // Null when oneDNN is not built in or switched off, or when it does not take this case (not 2-D,
  // an empty output, a channel-blocked tensor whose channels are not a multiple of 16). The pool
  // size of the calling thread decides the slicing. has_residual: run() adds a residual (the
  // output's shape) before the activation. layouts: which of X, Y and R are channel-blocked
  // (channel_blocked.h) rather than NCHW.
  static std::unique_ptr<OneDnnConv> make(const ConvPlan& p, const FusedActivation& act, bool has_bias,
                                          bool has_residual = false, ConvLayouts layouts = {});
  ~OneDnnConv();
  OneDnnConv(const OneDnnConv&) = delete;
  OneDnnConv& operator=(const OneDnnConv&) = delete;

  // Reorders W ([M, C/group, kh, kw], NCHW order) into the primitives' weight buffers; or, for each
  // slice whose packed bytes `packed` holds, uses those in place (recording what it packs when the store
  // records).
  Status pack_weights(const float* w, const backend::PackedWeightsRef& packed = {}) const;
  // pack_weights for a W the caller keeps at this address, unchanged, for as long as anything packed from
  // it may run (a session's initializer): each slice's packed bytes are shared with every OneDnnConv that
  // packs the same W into the same layout (kept_packs.h: the plans of other input sizes, run()'s per-call
  // primitives). With a store, found bytes are used as pack_weights uses them.
  Status pack_kept_weights(const float* w, const backend::PackedWeightsRef& packed = {}) const;
  // y = act((conv(x, w) + bias) + residual) with the weights of the last pack_weights(). bias: M
  // floats or null (must be given iff make() had has_bias); residual: the output's size or null
  // (must be given iff make() had has_residual; must not overlap y, which is written before the
  // residual is read). Fails only if a oneDNN primitive does.
  Status run(const float* x, const float* bias, float* y, const float* residual = nullptr) const;

  // Output-channel slices; whether it runs oneDNN's Winograd kernels (tests).
  int num_slices() const;
  bool winograd() const;

 private:
  struct Impl;
  explicit OneDnnConv(std::unique_ptr<Impl> impl);
  static std::unique_ptr<OneDnnConv> make_with(const ConvPlan& p, const FusedActivation& act, bool has_bias,
                                               bool has_residual, ConvLayouts layouts, bool allow_winograd);
  std::unique_ptr<Impl> impl_;
};

// Winograd for the convolutions that take it (see above): on unless SDX_NO_WINOGRAD=1 (read once);
// tests switch it for the kernels created after the call.
bool winograd_enabled();
void set_winograd_enabled(bool enabled);

// The run() of Conv / sdx.FusedConv on oneDNN (y allocated with p.out_shape): its status, or
// nullopt, with nothing written, when it does not take the case (not all float32, or
// OneDnnConv::make declines). Packs the weights on every call (w_kept: W is an initializer, packed as
// pack_kept_weights: found packed while a plan holds it). r: the residual (FusedConv) or null.
std::optional<Status> run_onednn_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x,
                                      const Tensor& w, bool w_kept, const Tensor* b, Tensor& y,
                                      const Tensor* r = nullptr, ConvLayouts layouts = {});
// Their prepare(): the bound call on oneDNN over ctx's buffers (X, W, B?, R? at inputs 0, 1, 2, 3;
// the caller has checked types and shapes and output 0), or null. Constant weights are packed
// here, once (w_kept: an initializer, shared as pack_kept_weights).
std::unique_ptr<backend::BoundKernel> bind_onednn_conv(const ConvPlan& p, const FusedActivation& act,
                                                       const backend::PrepareContext& ctx, bool w_kept,
                                                       ConvLayouts layouts = {});

}  // namespace sdx::cpu
