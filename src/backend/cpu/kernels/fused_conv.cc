// sdx.FusedConv(X, W, B?) -> act(Conv(X, W, B)), the op ConvEpilogueFusionOptimizations makes of
// Conv [+ Add(per-channel bias)] + activation (schema: src/ir/schemas/fused.cc).
//
// The convolution is Conv's own im2col + gemm (conv_gemm.h); the bias add and the activation run
// together on each (image, group) block of the output right after its gemm, while it is in cache
// (Relu, LeakyRelu and Clip on vectors, see epilogue_row in activation.h), instead of in another
// pass over the whole output. Every element goes through the operations
// of the unfused Conv -> activation (16-bit floats are rounded to the storage type between the two,
// as the separate kernels do), so the result equals the unfused one bit for bit.
//
// Bound form: the plan (shapes, window table), the im2col buffer, the gemm workspace and, for
// 16-bit floats, the float copies are made once in prepare().
//
// Float32 2-D convolutions run on oneDNN when it is built in (onednn_conv.h): bias and Relu /
// LeakyRelu / Clip as post-ops, other activations with the same functors after each slice, weights
// packed once at capture. Conv takes the same path, so FusedConv still equals Conv + activation.
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "backend/cpu/activation.h"
#include "backend/cpu/bound_util.h"
#include "backend/cpu/conv_gemm.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/onednn_conv.h"
#include "backend/cpu/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// Scratch of one FusedConv call: im2col buffer, gemm workspace, float copies of 16-bit tensors.
template <typename T>
struct ConvScratch {
  using C = compute_t<T>;
  static constexpr bool kHalf = !std::is_same_v<T, C>;
  ConvScratch(const ConvPlan& p, int64_t x_numel, int64_t w_numel, int64_t b_numel)
      : col(static_cast<size_t>(p.col_size())),
        ws(static_cast<size_t>(p.workspace_size())),
        x(kHalf ? static_cast<size_t>(x_numel) : 0),
        w(kHalf ? static_cast<size_t>(w_numel) : 0),
        b(kHalf ? static_cast<size_t>(b_numel) : 0),
        y(kHalf ? static_cast<size_t>(p.out_shape.numel()) : 0) {}
  ScratchBuffer<C> col, ws, x, w, b, y;
};

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

// pb: the bias (b_numel elements) or null.
template <typename T>
void fused_conv(const ConvPlan& p, const FusedActivation& act, const T* px, int64_t x_numel, const T* pw,
                int64_t w_numel, const T* pb, int64_t b_numel, T* py, ConvScratch<T>& s) {
  using C = compute_t<T>;
  if (p.out_shape.numel() == 0) return;
  const C* x = widened(px, x_numel, s.x.data());
  const C* w = widened(pw, w_numel, s.w.data());
  const C* b = pb ? widened(pb, b_numel, s.b.data()) : nullptr;
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
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (w.dtype() != x.dtype()) return invalid_argument("sdx.FusedConv weight must have the element type of X");
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (b && b->dtype() != x.dtype()) return invalid_argument("sdx.FusedConv bias must have the element type of X");
    SDX_ASSIGN_OR_RETURN(ConvPlan p,
                         ConvPlan::make(attrs_, x.shape(), w.shape(), b ? &b->shape() : nullptr, "sdx.FusedConv"), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), p.out_shape), "");
    if (y.numel() > 0) {
      if (std::optional<Status> st = run_onednn_conv(p, act_, x, w, b, y)) return *st;
    }
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          ConvScratch<T> s(p, x.numel(), w.numel(), b ? b->numel() : 0);
          fused_conv<T>(p, act_, x.data<T>(), x.numel(), w.data<T>(), w.numel(), b ? b->data<T>() : nullptr,
                        b ? b->numel() : 0, y.data<T>(), s);
          return Status::ok();
        },
        "sdx.FusedConv");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype())) return no_bound_form();
    Result<ConvPlan> plan = ConvPlan::make(attrs_, x.shape(), w.shape(), b ? &b->shape() : nullptr, "sdx.FusedConv");
    if (!plan.is_ok() || !output_matches(ctx, 0, x.dtype(), plan.value().out_shape)) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound = bind_onednn_conv(plan.value(), act_, ctx);
    if (bound) return bound;
    (void)dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const int64_t nb = b ? b->numel() : 0;
          auto s = std::make_unique<ConvScratch<T>>(plan.value(), x.numel(), w.numel(), nb);
          auto p = std::make_unique<ConvPlan>(std::move(plan.value()));
          bound = backend::bind_call([p = std::move(p), act = act_, px = x.data<T>(), nx = x.numel(), pw = w.data<T>(),
                                      nw = w.numel(), pb = b ? b->data<T>() : nullptr, nb,
                                      py = ctx.output(0).template data<T>(), s = std::move(s)] {
            fused_conv<T>(*p, act, px, nx, pw, nw, pb, nb, py, *s);
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
};

const backend::KernelRegistrar kFusedConv({"FusedConv", "sdx", 1, backend::kAnyOpset,
                                           backend::kernel_factory<FusedConvKernel>()});

}  // namespace
}  // namespace sdx::cpu
