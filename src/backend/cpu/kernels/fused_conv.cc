// sdx.FusedConv(X, W, B?, R?) -> act(Conv(X, W, B) + R), the op ConvEpilogueFusionOptimizations makes
// of Conv [+ Add(per-channel bias)] + activation and ConvResidualFusionOptimizations of Conv + Add(R)
// [+ activation] (schema: src/ir/schemas/fused.cc). R, the residual, has the output's shape.
//
// The convolution is Conv's own im2col + gemm (conv_gemm.h); the bias add and the activation run
// together on each (image, group) block of the output right after its gemm, while it is in cache
// (Relu, LeakyRelu and Clip on vectors, see epilogue_row in activation.h), instead of in another
// pass over the whole output. Every element goes through the operations
// of the unfused Conv -> activation (16-bit floats are rounded to the storage type between the two,
// as the separate kernels do), so the result equals the unfused one bit for bit. With a residual
// the reference computes Conv (bias included) first, then act(y + R) in a second pass (Conv -> Add
// -> activation, the roundings of each); this path only runs where oneDNN does not.
//
// Bound form: the plan (shapes, window table), the im2col buffer, the gemm workspace and, for
// 16-bit floats, the float copies are made once in prepare().
//
// Layouts: ConvLayoutOptimizations may make X, Y and R channel-blocked (attributes input_layout,
// output_layout, residual_layout = "NCHW16c"; channel_blocked.h; float32 2-D only). oneDNN reads
// and writes them in place; the reference path converts them to and from NCHW around the same
// NCHW computation, so every layout gives the same bits.
//
// Float32 depthwise convolutions (1-D or 2-D, group == channels) run on sdx's own kernel
// (depthwise_conv.h), the residual and lane-form activations applied in registers; other
// float32 2-D convolutions run on oneDNN when it is built in (onednn_conv.h; 3x3 stride-1 ones on
// its Winograd kernels): bias and (direct kernels) LeakyRelu as a post-op, other activations
// with the same functors after each slice, weights packed once at capture. Conv takes the same path, so FusedConv still equals Conv + activation
// (and Conv + Add(R) + activation: the residual is added by sdx on each slice, see onednn_conv.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/conv/depthwise_conv.h"
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

// Scratch of one FusedConv call: im2col buffer, gemm workspace, float copies of 16-bit tensors,
// NCHW copies of channel-blocked X, R and Y.
template <typename T>
struct ConvScratch {
  using C = compute_t<T>;
  static constexpr bool kHalf = !std::is_same_v<T, C>;
  ConvScratch(const ConvPlan& p, int64_t x_numel, int64_t w_numel, int64_t b_numel, const ConvLayouts& lay)
      : col(static_cast<size_t>(p.col_size())),
        ws(static_cast<size_t>(p.workspace_size())),
        x(kHalf ? static_cast<size_t>(x_numel) : 0),
        w(kHalf ? static_cast<size_t>(w_numel) : 0),
        b(kHalf ? static_cast<size_t>(b_numel) : 0),
        y(kHalf ? static_cast<size_t>(p.out_shape.numel()) : 0),
        x_nchw(lay.x ? static_cast<size_t>(x_numel) : 0),
        r_nchw(lay.r ? static_cast<size_t>(p.out_shape.numel()) : 0),
        y_nchw(lay.y ? static_cast<size_t>(p.out_shape.numel()) : 0) {}
  ScratchBuffer<C> col, ws, x, w, b, y;
  ScratchBuffer<T> x_nchw, r_nchw, y_nchw;
};

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

template <typename T>
const compute_t<T>* widened(const T* p, int64_t n, compute_t<T>* copy) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    (void)n;
    (void)copy;
    return p;
  } else {
    for (int64_t i = 0; i < n; ++i) copy[i] = to_f32(p[i]);
    return copy;
  }
}

// y = act(conv + R) for a computed conv (bias included, in compute type C; for 16-bit floats in
// s.y, then rounded as Conv stores it, and the sum rounded as Add stores it).
template <typename T, typename F>
void residual_epilogue(const F& f, const T* pr, int64_t n, T* py, ConvScratch<T>& s) {
  using C = compute_t<T>;
  if constexpr (ConvScratch<T>::kHalf) {
    const C* y = s.y.data();
    for (int64_t i = 0; i < n; ++i) {
      const C sum = load_as<C>(from_f32<T>(load_as<C>(from_f32<T>(y[i])) + to_f32(pr[i])));
      py[i] = from_f32<T>(f(sum));
    }
  } else {
    (void)s;
    epilogue_row(f, py, pr, n);
  }
}

// pb: the bias (b_numel elements) or null; pr: the residual (the output's size) or null; lay: which
// of X, Y, R are channel-blocked (float32 only, checked by check_layouts).
template <typename T>
void fused_conv(const ConvPlan& p, const FusedActivation& act, const T* px, int64_t x_numel, const T* pw,
                int64_t w_numel, const T* pb, int64_t b_numel, const T* pr, T* py, ConvScratch<T>& s,
                const ConvLayouts& lay = {}) {
  using C = compute_t<T>;
  if (p.out_shape.numel() == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (lay.any()) {
      if (lay.x) unblock_channels(px, s.x_nchw.data(), p.N, p.C, p.is);
      if (pr && lay.r) unblock_channels(pr, s.r_nchw.data(), p.N, p.M, p.os);
      float* y = lay.y ? s.y_nchw.data() : py;
      fused_conv<T>(p, act, lay.x ? s.x_nchw.data() : px, x_numel, pw, w_numel, pb, b_numel,
                    pr && lay.r ? s.r_nchw.data() : pr, y, s);
      if (lay.y) block_channels(y, py, p.N, p.M, p.os);
      return;
    }
  }
  const C* x = widened(px, x_numel, s.x.data());
  const C* w = widened(pw, w_numel, s.w.data());
  const C* b = pb ? widened(pb, b_numel, s.b.data()) : nullptr;
  if (pr) {
    C* y = nullptr;
    if constexpr (ConvScratch<T>::kHalf) y = s.y.data();
    else y = py;
    conv_forward<C>(p, x, w, b, y, s.col.data(), s.ws.data(), NoConvEpilogue{});
    act.visit([&](auto f) { residual_epilogue<T>(f, pr, p.out_shape.numel(), py, s); });
    return;
  }
  act.visit([&](auto f) {
    if constexpr (ConvScratch<T>::kHalf) {
      // Conv stores T, the activation reads it back.
      auto epilogue = [f](C v) { return f(load_as<C>(from_f32<T>(v))); };
      conv_forward<C>(p, x, w, b, s.y.data(), s.col.data(), s.ws.data(), epilogue);
      const int64_t n = p.out_shape.numel();
      for (int64_t i = 0; i < n; ++i) py[i] = from_f32<T>(s.y.data()[i]);
    } else if constexpr (std::is_same_v<decltype(f), IdentityActivation>) {
      conv_forward<C>(p, x, w, b, py, s.col.data(), s.ws.data(), NoConvEpilogue{});
    } else {
      conv_forward<C>(p, x, w, b, py, s.col.data(), s.ws.data(), f);
    }
  });
}

class FusedConvKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_RETURN_IF_ERROR(attrs_.read(node), "sdx.FusedConv");
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
    const Tensor* r = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
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
      if (std::optional<Status> st = run_onednn_conv(p, act_, x, w, b, y, r, layouts_)) return *st;
    }
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          ConvScratch<T> s(p, x.numel(), w.numel(), b ? b->numel() : 0, layouts_);
          fused_conv<T>(p, act_, x.data<T>(), x.numel(), w.data<T>(), w.numel(), b ? b->data<T>() : nullptr,
                        b ? b->numel() : 0, r ? r->data<T>() : nullptr, y.data<T>(), s, layouts_);
          return Status::ok();
        },
        "sdx.FusedConv");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* r = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()) || (r && r->dtype() != x.dtype()))
      return no_bound_form();
    Result<ConvPlan> plan = ConvPlan::make(attrs_, x.shape(), w.shape(), b ? &b->shape() : nullptr, "sdx.FusedConv");
    if (!plan.is_ok() || !output_matches(ctx, 0, x.dtype(), plan.value().out_shape)) return no_bound_form();
    if (r && r->shape() != plan.value().out_shape) return no_bound_form();
    if (!check_layouts(layouts_, x.dtype(), plan.value(), r != nullptr).is_ok()) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound = bind_depthwise_conv(plan.value(), act_, ctx, layouts_);
    if (!bound) bound = bind_onednn_conv(plan.value(), act_, ctx, layouts_);
    if (bound) return bound;
    (void)dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const int64_t nb = b ? b->numel() : 0;
          auto s = std::make_unique<ConvScratch<T>>(plan.value(), x.numel(), w.numel(), nb, layouts_);
          auto p = std::make_unique<ConvPlan>(std::move(plan.value()));
          bound = backend::bind_call([p = std::move(p), act = act_, lay = layouts_, px = x.data<T>(), nx = x.numel(),
                                      pw = w.data<T>(), nw = w.numel(), pb = b ? b->data<T>() : nullptr, nb,
                                      pr = r ? r->data<T>() : nullptr, py = ctx.output(0).template data<T>(),
                                      s = std::move(s)] {
            fused_conv<T>(*p, act, px, nx, pw, nw, pb, nb, pr, py, *s, lay);
            return Status::ok();
          });
          return Status::ok();
        },
        "sdx.FusedConv");
    return bound;
  }

 private:
  ConvAttrs attrs_;
  FusedActivation act_;
  ConvLayouts layouts_;
};

const backend::KernelRegistrar kFusedConv({"FusedConv", "sdx", 1, backend::kAnyOpset,
                                           backend::kernel_factory<FusedConvKernel>()});

}  // namespace
}  // namespace sdx::cpu
