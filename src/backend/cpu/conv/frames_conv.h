// A float32 convolution with one input channel and a long 1-D filter (an STFT or a learned
// filterbank written as Conv: openWakeWord's melspectrogram, 1 -> 257 channels, 512 taps, stride 160)
// as a matrix product over frames, on oneDNN's prepacked matmul:
//
//   col[o, k] = x[o * stride + k * dilation - pad]   (0 outside x; O frames of K taps)
//   Y^T[O, M] = col[O, K] . W^T[K, M]                 (OneDnnMatMul, W^T packed once)
//   y[m, o]   = act(Y^T[o, m] + b[m] (+ r[m, o]))
//
// oneDNN's direct convolution kernels block over input channels, so with one channel they run at a
// fraction of their speed (280 us per melspectrogram convolution against 190 us for the product).
// Conv and sdx.FusedConv take this path alike (kernels/nn_conv.cc, kernels/fused_conv.cc), bound or
// not, so a FusedConv still gives the bits of Conv followed by its epilogue.
//
// Taken for: float32, N x 1 x L (1-D) or N x 1 x 1 x L with a 1 x K kernel (2-D over one row), group
// 1, at least kMinTaps taps, plain layouts, and a product oneDNN's matmul accepts; else the other paths.
#pragma once

#include <memory>
#include <optional>

#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/kernel.h"
#include "core/tensor.h"

namespace sdx::cpu {

inline constexpr int64_t kFramesConvMinTaps = 64;

// run(): the convolution on this path (y allocated), or nullopt when it does not apply.
std::optional<Status> run_frames_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x, const Tensor& w,
                                      const Tensor* b, Tensor& y, const Tensor* r = nullptr, ConvLayouts layouts = {});
// prepare(): the bound call over ctx's buffers (X, W, B?, R? at inputs 0..3), or null. Constant
// weights are packed here, once.
std::unique_ptr<backend::BoundKernel> bind_frames_conv(const ConvPlan& p, const FusedActivation& act,
                                                       const backend::PrepareContext& ctx, ConvLayouts layouts = {});

}  // namespace sdx::cpu
