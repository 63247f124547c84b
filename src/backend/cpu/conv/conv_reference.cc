// See conv_reference.h.
#include "backend/cpu/conv/conv_reference.h"

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "backend/cpu/kernels/util/bound_util.h"
#include "core/tensor_values.h"
#include "core/type_dispatch.h"

namespace sdx::cpu {
namespace {

// Scratch of one call: im2col buffer, gemm workspace, float copies of 16-bit tensors,
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
void reference_conv(const ConvPlan& p, const FusedActivation& act, const T* px, int64_t x_numel, const T* pw,
                int64_t w_numel, const T* pb, int64_t b_numel, const T* pr, T* py, ConvScratch<T>& s,
                const ConvLayouts& lay = {}) {
  using C = compute_t<T>;
  if (p.out_shape.numel() == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (lay.any()) {
      if (lay.x) unblock_channels(px, s.x_nchw.data(), p.N, p.C, p.is);
      if (pr && lay.r) unblock_channels(pr, s.r_nchw.data(), p.N, p.M, p.os);
      float* y = lay.y ? s.y_nchw.data() : py;
      reference_conv<T>(p, act, lay.x ? s.x_nchw.data() : px, x_numel, pw, w_numel, pb, b_numel,
                    pr && lay.r ? s.r_nchw.data() : pr, y, s);
      if (lay.y) block_channels(y, py, p.N, p.M, p.os);
      return;
    }
  }
  const C* x = as_compute(px, x_numel, s.x.data());
  const C* w = as_compute(pw, w_numel, s.w.data());
  const C* b = pb ? as_compute(pb, b_numel, s.b.data()) : nullptr;
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

}  // namespace

Status run_reference_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x, const Tensor& w,
                          const Tensor* b, const Tensor* r, Tensor& y, ConvLayouts layouts) {
  return dispatch<SDX_FLOAT_TYPES>(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        ConvScratch<T> s(p, x.numel(), w.numel(), b ? b->numel() : 0, layouts);
        reference_conv<T>(p, act, x.data<T>(), x.numel(), w.data<T>(), w.numel(), b ? b->data<T>() : nullptr,
                          b ? b->numel() : 0, r ? r->data<T>() : nullptr, y.data<T>(), s, layouts);
        return Status::ok();
      },
      "convolution");
}

std::unique_ptr<backend::BoundKernel> bind_reference_conv(const ConvPlan& p, const FusedActivation& act,
                                                          const backend::PrepareContext& ctx, ConvLayouts layouts) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = optional_input(ctx, 2);
  const Tensor* r = optional_input(ctx, 3);
  std::unique_ptr<backend::BoundKernel> bound;
  (void)dispatch<SDX_FLOAT_TYPES>(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const int64_t nb = b ? b->numel() : 0;
        auto s = std::make_unique<ConvScratch<T>>(p, x.numel(), w.numel(), nb, layouts);
        auto plan = std::make_unique<ConvPlan>(p);
        bound = backend::bind_call([plan = std::move(plan), act, layouts, px = x.data<T>(), nx = x.numel(),
                                    pw = w.data<T>(), nw = w.numel(), pb = b ? b->data<T>() : nullptr, nb,
                                    pr = r ? r->data<T>() : nullptr, py = ctx.output(0).template data<T>(),
                                    s = std::move(s)] {
          reference_conv<T>(*plan, act, px, nx, pw, nw, pb, nb, pr, py, *s, layouts);
          return Status::ok();
        });
        return Status::ok();
      },
      "convolution");
  return bound;
}

}  // namespace sdx::cpu
