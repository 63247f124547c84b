// The reference convolution of Conv and sdx.FusedConv: Conv's own im2col + gemm (conv_gemm.h) over
// any rank and every float type, with FusedConv's epilogue, y = act((conv(x, w) + b) + r), where the
// faster paths (conv/depthwise_conv.h, onednn/onednn_conv.h) do not take the case.
//
// The bias add and the activation run together on each (image, group) block of the output right after
// its gemm, while it is in cache (Relu, LeakyRelu and Clip on vectors, see epilogue_row in
// activation.h). Every element goes through the operations of the unfused Conv -> activation (16-bit
// floats are rounded to the storage type between the two, as the separate kernels do), so the result
// equals the unfused one bit for bit. With a residual the convolution (bias included) comes first,
// then act(y + R) in a second pass (Conv -> Add -> activation, the roundings of each).
// Channel-blocked X, Y and R (NCHW16c, float32 2-D only) are converted to and from NCHW around the
// same NCHW computation, so every layout gives the same bits.
//
// Bound form: the plan (shapes, window table), the im2col buffer, the gemm workspace and, for
// 16-bit floats, the float copies are made once in bind_reference_conv; each call only computes.
#pragma once

#include <memory>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/kernel.h"

namespace sdx::cpu {

// y = act((conv(x, w) + b) + r); y allocated with p.out_shape; b and r may be null; the tensors in
// `layouts` (float32 only). Fails for element types other than the float types.
Status run_reference_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x, const Tensor& w,
                          const Tensor* b, const Tensor* r, Tensor& y, ConvLayouts layouts = {});

// The same over ctx's buffers (X, W, B?, R? at inputs 0, 1, 2, 3; the caller has checked types,
// shapes and output 0), everything but the arithmetic prepared now; null for other element types.
std::unique_ptr<backend::BoundKernel> bind_reference_conv(const ConvPlan& p, const FusedActivation& act,
                                                          const backend::PrepareContext& ctx, ConvLayouts layouts = {});

}  // namespace sdx::cpu
