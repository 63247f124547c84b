// Conv and ConvTranspose over N spatial dims (1-D, 2-D, 3-D, ...), via im2col/col2im + gemm.
// Conv takes the paths of sdx.FusedConv without activation (see fused_conv.cc): sdx's depthwise
// kernel, the frames product (conv/frames_conv.h: one input channel, a long 1-D filter), the pointwise
// product (conv/pointwise_conv.h: 1x1 on an NCHW input), oneDNN, then
// the reference im2col + gemm (conv/conv_reference.h), each with a bound form.
// ConvTranspose runs below.
//
// Both build one index table per run mapping (kernel offset, position) to the flat spatial
// index on the other side (or -1 for padding), so the N-D bookkeeping is done once and the
// per-channel loops are plain gathers/scatters. The forward im2col + gemm and the shared
// attribute / window code live in conv_gemm.h, which the fused sdx.FusedConv reuses.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/conv/conv_reference.h"
#include "backend/cpu/conv/depthwise_conv.h"
#include "backend/cpu/conv/frames_conv.h"
#include "backend/cpu/conv/pointwise_conv.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/cpu/kernels/util/conv_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/onednn/onednn_conv.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

class ConvKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Value* w = node.num_inputs() > 1 ? node.input(1) : nullptr;
    w_kept_ = w && w->is_initializer() && !w->is_graph_input();
    return attrs_.read(node);
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (w.dtype() != x.dtype()) return invalid_argument("Conv weight must have the element type of X");
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (b && b->dtype() != x.dtype()) return invalid_argument("Conv bias must have the element type of X");
    SDX_ASSIGN_OR_RETURN(ConvPlan p, ConvPlan::make(attrs_, x.shape(), w.shape(), b ? &b->shape() : nullptr, "Conv"),
                         "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), p.out_shape), "");
    if (y.numel() == 0) return Status::ok();
    if (std::optional<Status> st = run_depthwise_conv(p, FusedActivation(), x, w, b, y)) return *st;
    if (std::optional<Status> st = run_frames_conv(p, FusedActivation(), x, w, b, y)) return *st;
    if (std::optional<Status> st = run_pointwise_conv(p, FusedActivation(), x, w, b, y)) return *st;
    if (std::optional<Status> st = run_onednn_conv(p, FusedActivation(), x, w, w_kept_, b, y)) return *st;
    return run_reference_conv(p, FusedActivation(), x, w, b, nullptr, y);
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = optional_input(ctx, 2);
    Result<ConvPlan> plan = ConvPlan::make(attrs_, x.shape(), w.shape(), b ? &b->shape() : nullptr, "Conv");
    if (!plan.is_ok() || !output_matches(ctx, 0, x.dtype(), plan.value().out_shape)) return no_bound_form();
    if (x.dtype() != w.dtype() || (b && b->dtype() != x.dtype())) return no_bound_form();
    if (auto bound = bind_depthwise_conv(plan.value(), FusedActivation(), ctx)) return bound;
    if (auto bound = bind_frames_conv(plan.value(), FusedActivation(), ctx)) return bound;
    if (auto bound = bind_pointwise_conv(plan.value(), FusedActivation(), ctx)) return bound;
    if (auto bound = bind_onednn_conv(plan.value(), FusedActivation(), ctx, w_kept_)) return bound;
    return bind_reference_conv(plan.value(), FusedActivation(), ctx);
  }

 private:
  ConvAttrs attrs_;
  bool w_kept_ = false;  // W is an initializer: its oneDNN packings are shared (kept_packs.h)
};

// The calling thread's column buffer for ConvTranspose, at least n elements (grown on a thread's
// first call after a larger one, never in steady state).
template <typename Cp>
Cp* transpose_columns(size_t n) {
  thread_local std::vector<Cp> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// 1-D and 2-D ConvTranspose (1-D as H = OH = 1; g's geometry per spatial axis, the last one W):
// per image and group, col[(m, kh, kw), p] = sum_c W[c, m, kh, kw] X[c, p] (one gemm over a band of
// input rows at a time, so col stays under kConvColBudget), then each column row is added into the
// output row it lands on: output (h * s_h - pad_t + kh * d_h, w * s_w - pad_l + kw * d_w), the range
// of w inside the image computed once per (kw), split over the pool by output channels. The output
// starts as the bias. The same terms as the table-driven N-D path; where overlapping windows meet
// across two bands of rows, in another order (so in the last bits).
template <typename Cp>
void conv_transpose_2d(const WindowGeometry& g, int64_t N, int64_t C, int64_t G, int64_t Mg, int64_t H, int64_t W,
                       int64_t OH, int64_t OW, const Cp* x, const Cp* w, const Cp* b, Cp* y) {
  const bool two_d = g.rank() == 2;
  const int64_t KH = two_d ? g.kernel[0] : 1, KW = g.kernel.back();
  const int64_t sh = two_d ? g.strides[0] : 1, sw = g.strides.back();
  const int64_t dh = two_d ? g.dilations[0] : 1, dw = g.dilations.back();
  const int64_t pt = two_d ? g.pads[0] : 0, pl = g.pads[two_d ? 1 : 0];
  const int64_t Cg = C / G, M = Mg * G, ks = KH * KW, rows = Mg * ks, is = H * W, os = OH * OW;
  // Input rows per band: the column buffer (rows x band * W) within budget.
  const int64_t band = std::max<int64_t>(1, std::min(H, kConvColBudget / std::max<int64_t>(1, rows * W)));
  Cp* col = transpose_columns<Cp>(static_cast<size_t>(rows * band * W));
  // Input columns w whose output column for tap kw lies inside [0, OW): [w_lo[kw], w_hi[kw]).
  std::vector<int64_t> w_lo(static_cast<size_t>(KW)), w_hi(static_cast<size_t>(KW));
  for (int64_t kw = 0; kw < KW; ++kw) {
    const int64_t off = kw * dw - pl;  // ox = w * sw + off
    w_lo[kw] = off >= 0 ? 0 : (-off + sw - 1) / sw;
    w_hi[kw] = OW - 1 - off < 0 ? 0 : std::min(W, (OW - 1 - off) / sw + 1);
  }
  for (int64_t n = 0; n < N; ++n) {
    Cp* yn = y + n * M * os;
    for (int64_t m = 0; m < M; ++m) std::fill(yn + m * os, yn + (m + 1) * os, b ? b[m] : Cp(0));
    for (int64_t gi = 0; gi < G; ++gi) {
      for (int64_t h0 = 0; h0 < H; h0 += band) {
        const int64_t hn = std::min(band, H - h0), cols = hn * W;
        gemm(true, false, rows, cols, Cg, Cp(1), w + gi * Cg * rows, rows, x + (n * C + gi * Cg) * is + h0 * W, is,
             Cp(0), col, cols);
        parallel_for(Mg, 1, [&](int64_t m0, int64_t m1) {
          for (int64_t m = m0; m < m1; ++m) {
            Cp* ym = yn + (gi * Mg + m) * os;
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const Cp* src = col + ((m * KH + kh) * KW + kw) * cols;
                for (int64_t h = h0; h < h0 + hn; ++h) {
                  const int64_t oy = h * sh - pt + kh * dh;
                  if (oy < 0 || oy >= OH) continue;
                  Cp* yr = ym + oy * OW + kw * dw - pl;
                  const Cp* sr = src + (h - h0) * W;
                  for (int64_t ww = w_lo[kw]; ww < w_hi[kw]; ++ww) yr[ww * sw] += sr[ww];
                }
              }
          }
        });
      }
    }
  }
}

class ConvTransposeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    output_padding_ = node.attr_ints("output_padding");
    output_shape_ = node.attr_ints("output_shape");
    return attrs_.read(node);
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.rank() < 3) {
      return invalid_argument("ConvTranspose input X must have rank >= 3, got " + x.shape().to_string());
    }
    if (w.rank() != x.rank()) {
      return invalid_argument("ConvTranspose weight " + w.shape().to_string() + " must have the rank of X " +
                              x.shape().to_string());
    }
    if (w.dtype() != x.dtype()) return invalid_argument("ConvTranspose weight must have the element type of X");
    SDX_ASSIGN_OR_RETURN(WindowGeometry g, attrs_.geometry(w.shape()), "ConvTranspose");
    const int n = g.rank();
    const int64_t N = x.shape()[0], C = x.shape()[1], G = attrs_.group;
    const int64_t Mg = w.shape()[1], M = Mg * G;
    if (C % G != 0 || w.shape()[0] != C) {
      return invalid_argument("ConvTranspose channels do not match: X " + x.shape().to_string() + ", W " +
                              w.shape().to_string() + ", group " + std::to_string(G));
    }
    if (ctx.has_input(2) && (ctx.input(2).rank() != 1 || ctx.input(2).shape()[0] != M)) {
      return invalid_argument("ConvTranspose bias must have shape [" + std::to_string(M) + "]");
    }
    std::vector<int64_t> opad = output_padding_;
    if (opad.empty()) opad.assign(static_cast<size_t>(n), 0);
    if (static_cast<int>(opad.size()) != n) return invalid_argument("output_padding must have one value per spatial dim");
    for (int i = 0; i < n; ++i)  // the spec: output_padding[i] < stride[i] or dilation[i]
      if (opad[i] < 0 || (opad[i] >= g.strides[i] && opad[i] >= g.dilations[i]))
        return invalid_argument("output_padding " + std::to_string(opad[i]) + " of spatial dim " + std::to_string(i) +
                                " must be non-negative and less than its stride (" + std::to_string(g.strides[i]) +
                                ") or dilation (" + std::to_string(g.dilations[i]) + ")");
    const std::vector<int64_t> in(x.shape().dims().begin() + 2, x.shape().dims().end());

    // Output size and pads: explicit pads, or derived from output_shape / auto_pad.
    std::vector<int64_t> out(static_cast<size_t>(n));
    std::vector<int64_t> target;
    if (!output_shape_.empty()) {
      if (static_cast<int>(output_shape_.size()) < n) return invalid_argument("output_shape has too few values");
      target.assign(output_shape_.end() - n, output_shape_.end());
    } else if (!attrs_.has_pads && (attrs_.auto_pad == AutoPad::kSameUpper || attrs_.auto_pad == AutoPad::kSameLower)) {
      for (int i = 0; i < n; ++i) target.push_back(in[i] * g.strides[i]);
    }
    for (int i = 0; i < n; ++i) {
      const int64_t full = g.strides[i] * (in[i] - 1) + opad[i] + g.window(i);
      if (!target.empty()) {
        out[i] = target[i];
        if (!attrs_.has_pads || attrs_.auto_pad != AutoPad::kNotSet) {
          const int64_t total = full - target[i];
          const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor(total / 2)
          g.pads[i] = attrs_.auto_pad == AutoPad::kSameUpper ? half : total - half;
          g.pads[i + n] = total - g.pads[i];
        }
      } else {
        if (attrs_.auto_pad == AutoPad::kValid) g.pads[i] = g.pads[i + n] = 0;
        out[i] = full - g.pads[i] - g.pads[i + n];
      }
      if (out[i] < 0) return invalid_argument("ConvTranspose output size is negative");
    }
    std::vector<int64_t> out_dims = {N, M};
    out_dims.insert(out_dims.end(), out.begin(), out.end());
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "ConvTranspose output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
    if (y.numel() == 0) return Status::ok();

    return dispatch<float, double, Float16, BFloat16>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using Cp = compute_t<T>;
          ComputeView<T> xv(x), wv(w);
          ComputeOut<T> yo(y);
          const int64_t is = product(in), os = product(out), ks = product(g.kernel);
          const int64_t Cg = C / G, rows = Mg * ks;
          std::optional<ComputeView<T>> bv;
          if (ctx.has_input(2)) bv.emplace(ctx.input(2));
          if (n <= 2) {
            conv_transpose_2d<Cp>(g, N, C, G, Mg, n == 2 ? in[0] : 1, in[n - 1], n == 2 ? out[0] : 1, out[n - 1],
                                  xv.data(), wv.data(), bv ? bv->data() : nullptr, yo.data());
            yo.commit();
            return Status::ok();
          }
          const std::vector<int64_t> table = window_table(in, out, g);
          std::vector<Cp> col(static_cast<size_t>(rows * is));
          Cp* yp = yo.data();
          for (int64_t n0 = 0; n0 < N; ++n0) {
            for (int64_t gi = 0; gi < G; ++gi) {
              // col[(m, k), i] = sum_c W[g*Cg + c, m, k] * X[n, g*Cg + c, i]
              gemm(true, false, rows, is, Cg, Cp(1), wv.data() + gi * Cg * rows, rows,
                   xv.data() + (n0 * C + gi * Cg) * is, is, Cp(0), col.data(), is);
              for (int64_t m = 0; m < Mg; ++m) {
                Cp* ym = yp + (n0 * M + gi * Mg + m) * os;
                const Cp b = bv ? bv->data()[gi * Mg + m] : Cp(0);
                std::fill(ym, ym + os, b);
                for (int64_t k = 0; k < ks; ++k) {
                  const int64_t* t = table.data() + k * is;
                  const Cp* src = col.data() + (m * ks + k) * is;
                  for (int64_t i = 0; i < is; ++i)
                    if (t[i] >= 0) ym[t[i]] += src[i];
                }
              }
            }
          }
          yo.commit();
          return Status::ok();
        },
        "ConvTranspose");
  }

 private:
  ConvAttrs attrs_;
  std::vector<int64_t> output_padding_, output_shape_;
};

const backend::KernelRegistrar kConv({"Conv", "", 1, backend::kAnyOpset, backend::kernel_factory<ConvKernel>()});
const backend::KernelRegistrar kConvTranspose({"ConvTranspose", "", 1, backend::kAnyOpset,
                                               backend::kernel_factory<ConvTransposeKernel>()});

}  // namespace
}  // namespace sdx::cpu
