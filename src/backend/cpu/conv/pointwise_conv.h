// A float32 1x1 convolution (unit strides, no padding, one group) on an NCHW input as a matrix product
// read in place: Y[M, P] = W[M, C] . X[C, P] per image, P the positions, one register-tiled loop
// (pointwise_kernels.h) over column chunks split across the pool, the epilogue (activation, residual)
// on each chunk while it is in cache.
//
// Why not oneDNN: its 1x1 kernels want a channel-blocked X, so an NCHW X is reordered as a whole first,
// and its NCHW fallback packs X for a GEMM; ORT's MLAS runs such a convolution as a plain GEMM. On the
// 1x1 layers of yolox_ddddocr_det (24 to 192 channels, 26 x 26 to 104 x 104, 1 thread) it took 87 to
// 274 us where oneDNN took 256 to 417 (and onnxruntime 160 to 294). With X in the blocked layout
// oneDNN's direct kernels read it in place, with few positions or many input channels oneDNN is
// faster (kPointwiseMinPositions, kPointwiseMaxChannels), and this path declines.
//
// Y may be NCHW or channel-blocked (a chunk goes through a per-thread buffer and is transposed into the
// blocked layout in 16 x 16 tiles); R, the residual, NCHW. Conv and sdx.FusedConv take this path alike
// (kernels/nn_conv.cc, kernels/fused_conv.cc), bound or not, so a FusedConv gives the bits of Conv
// followed by its epilogue.
#pragma once

#include <memory>
#include <optional>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/kernel.h"
#include "core/tensor.h"

namespace sdx::cpu {

// Input channels above which, and positions per image below which, the path declines (pointwise_conv.cc).
inline constexpr int64_t kPointwiseMaxChannels = 512;
inline constexpr int64_t kPointwiseMinPositions = 128;

// Whether this path takes the plan: pointwise, one group, X and R NCHW (Y either), and within the
// shapes where it beats oneDNN (pointwise_conv.cc).
bool pointwise_conv_applies(const ConvPlan& p, ConvLayouts layouts);

// run(): the convolution on this path (y allocated), or nullopt when it does not apply.
std::optional<Status> run_pointwise_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x,
                                         const Tensor& w, const Tensor* b, Tensor& y, const Tensor* r = nullptr,
                                         ConvLayouts layouts = {});
// prepare(): the bound call over ctx's buffers (X, W, B?, R? at inputs 0..3), or null.
std::unique_ptr<backend::BoundKernel> bind_pointwise_conv(const ConvPlan& p, const FusedActivation& act,
                                                          const backend::PrepareContext& ctx, ConvLayouts layouts = {});

}  // namespace sdx::cpu
