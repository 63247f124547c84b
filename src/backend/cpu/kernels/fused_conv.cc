// sdx.FusedConv(X, W, B?, R?) -> act(Conv(X, W, B) + R), the op ConvEpilogueFusionOptimizations makes
// of Conv [+ Add(per-channel bias)] + activation and ConvResidualFusionOptimizations of Conv + Add(R)
// [+ activation] (schema: src/ir/schemas/fused.cc). R, the residual, has the output's shape.
//
// Paths, tried in order, the same for Conv (nn_conv.cc), so FusedConv equals Conv + activation (and
// Conv + Add(R) + activation) bit for bit on each:
// - float32 depthwise convolutions (1-D or 2-D, two or more groups of one input channel): sdx's own
//   kernel (conv/depthwise_conv.h), the residual and lane-form activations applied in registers;
// - float32 convolutions of one input channel with a long 1-D filter (an STFT as Conv): a product over
//   frames on oneDNN's prepacked matmul (conv/frames_conv.h);
// - float32 1x1 convolutions (unit strides, no padding, one group) on an NCHW X: a product read in
//   place (conv/pointwise_conv.h), the epilogue on each chunk;
// - other float32 2-D (and large 1-D) convolutions on oneDNN when it is built in
//   (onednn/onednn_conv.h; 3x3 stride-1 ones on its Winograd kernels): bias and (direct kernels)
//   LeakyRelu as a post-op, other activations and the residual with sdx's functors after each
//   slice, weights packed once at capture;
// - the rest on the reference im2col + gemm with the epilogue on each block (conv/conv_reference.h).
// Each has a bound form made in prepare().
//
// Layouts: ConvLayoutOptimizations may make X, Y and R channel-blocked (attributes input_layout,
// output_layout, residual_layout = "NCHW16c"; channel_blocked.h; float32 2-D only). oneDNN and the
// depthwise kernel read and write them in place; the reference converts them to and from NCHW.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/conv/conv_reference.h"
#include "backend/cpu/conv/depthwise_conv.h"
#include "backend/cpu/conv/frames_conv.h"
#include "backend/cpu/conv/pointwise_conv.h"
#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/kernels/util/conv_gemm.h"
#include "core/type_dispatch.h"
#include "backend/cpu/onednn/onednn_conv.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// "NCHW" or "NCHW16c" (channel-blocked).
Result<bool> read_blocked(const ir::Node& node, const char* name) {
  const std::string v = node.attr_string(name, "NCHW");
  if (v == "NCHW") return false;
  if (v == "NCHW16c") return true;
  return invalid_argument(std::string(name) + " must be \"NCHW\" or \"NCHW16c\", got \"" + v + "\"");
}

// Channel-blocked tensors: float32 2-D convolutions, 16-channel multiples, R only with a residual.
Status check_layouts(const ConvLayouts& lay, DType dt, const ConvPlan& p, bool has_residual) {
  if (!lay.any()) return Status::ok();
  if (dt != DType::kFloat32 || p.g.rank() != 2)
    return invalid_argument("sdx.FusedConv: channel-blocked layouts need a float32 2-D convolution");
  if ((lay.x && p.C % kChannelBlock != 0) || ((lay.y || lay.r) && p.M % kChannelBlock != 0))
    return invalid_argument("sdx.FusedConv: a channel-blocked tensor needs a multiple of 16 channels");
  if (lay.r && !has_residual) return invalid_argument("sdx.FusedConv: residual_layout without a residual");
  return Status::ok();
}

class FusedConvKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_RETURN_IF_ERROR(attrs_.read(node), "sdx.FusedConv");
    const ir::Value* w = node.num_inputs() > 1 ? node.input(1) : nullptr;
    w_kept_ = w && w->is_initializer() && !w->is_graph_input();
    SDX_ASSIGN_OR_RETURN(act_, FusedActivation::from_node(node), "sdx.FusedConv");
    SDX_ASSIGN_OR_RETURN(layouts_.x, read_blocked(node, "input_layout"), "sdx.FusedConv");
    SDX_ASSIGN_OR_RETURN(layouts_.y, read_blocked(node, "output_layout"), "sdx.FusedConv");
    SDX_ASSIGN_OR_RETURN(layouts_.r, read_blocked(node, "residual_layout"), "sdx.FusedConv");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (w.dtype() != x.dtype()) return invalid_argument("sdx.FusedConv weight must have the element type of X");
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (b && b->dtype() != x.dtype()) return invalid_argument("sdx.FusedConv bias must have the element type of X");
    const Tensor* r = optional_input(ctx, 3);
    if (r && r->dtype() != x.dtype()) return invalid_argument("sdx.FusedConv residual must have the element type of X");
    SDX_ASSIGN_OR_RETURN(ConvPlan p,
                         ConvPlan::make(attrs_, x.shape(), w.shape(), b ? &b->shape() : nullptr, "sdx.FusedConv"), "");
    if (r && r->shape() != p.out_shape)
      return invalid_argument("sdx.FusedConv residual " + r->shape().to_string() + " must have the output's shape " +
                              p.out_shape.to_string());
    SDX_RETURN_IF_ERROR(check_layouts(layouts_, x.dtype(), p, r != nullptr), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), p.out_shape), "");
    if (y.numel() > 0) {
      if (std::optional<Status> st = run_depthwise_conv(p, act_, x, w, b, y, r, layouts_)) return *st;
      if (std::optional<Status> st = run_frames_conv(p, act_, x, w, b, y, r, layouts_)) return *st;
      if (std::optional<Status> st = run_pointwise_conv(p, act_, x, w, b, y, r, layouts_)) return *st;
      if (std::optional<Status> st = run_onednn_conv(p, act_, x, w, w_kept_, b, y, r, layouts_)) return *st;
    }
    return run_reference_conv(p, act_, x, w, b, r, y, layouts_);
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = optional_input(ctx, 2);
    const Tensor* r = optional_input(ctx, 3);
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()) || (r && r->dtype() != x.dtype()))
      return no_bound_form();
    Result<ConvPlan> plan = ConvPlan::make(attrs_, x.shape(), w.shape(), b ? &b->shape() : nullptr, "sdx.FusedConv");
    if (!plan.is_ok() || !output_matches(ctx, 0, x.dtype(), plan.value().out_shape)) return no_bound_form();
    if (r && r->shape() != plan.value().out_shape) return no_bound_form();
    if (!check_layouts(layouts_, x.dtype(), plan.value(), r != nullptr).is_ok()) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound = bind_depthwise_conv(plan.value(), act_, ctx, layouts_);
    if (!bound) bound = bind_frames_conv(plan.value(), act_, ctx, layouts_);
    if (!bound) bound = bind_pointwise_conv(plan.value(), act_, ctx, layouts_);
    if (!bound) bound = bind_onednn_conv(plan.value(), act_, ctx, w_kept_, layouts_);
    if (!bound) bound = bind_reference_conv(plan.value(), act_, ctx, layouts_);
    return bound;
  }

 private:
  ConvAttrs attrs_;
  FusedActivation act_;
  ConvLayouts layouts_;
  bool w_kept_ = false;  // W is an initializer: its oneDNN packings are shared (kept_packs.h)
};

const backend::KernelRegistrar kFusedConv({"FusedConv", "sdx", 1, backend::kAnyOpset,
                                           backend::kernel_factory<FusedConvKernel>()});

}  // namespace
}  // namespace sdx::cpu
