// Conv and ConvTranspose over N spatial dims (1-D, 2-D, 3-D, ...), via im2col/col2im + gemm.
//
// Both build one index table per run mapping (kernel offset, position) to the flat
// spatial index on the other side (or -1 for padding), so the N-D bookkeeping is
// done once and the per-channel loops are plain gathers/scatters.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/conv_util.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/gemm.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// Elements of the im2col buffer Conv fills at a time (4 MB of floats).
constexpr int64_t kColBudget = int64_t{1} << 20;

// table[kk * count(from) + p] = flat index in `to` of position p (in `from`) shifted by kernel
// offset kk, or -1 when it falls outside `to`. forward: to_pos = p * s - pad + k * d (Conv);
// otherwise the ConvTranspose mapping to_pos = p * s - pad + k * d with `from` the input.
std::vector<int64_t> window_table(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                                  const WindowGeometry& g) {
  const int n = g.rank();
  const int64_t ks = product(g.kernel), fs = product(from);
  std::vector<int64_t> table(static_cast<size_t>(ks * fs));
  std::vector<int64_t> kk(static_cast<size_t>(n), 0), p(static_cast<size_t>(n), 0);
  for (int64_t ki = 0; ki < ks; ++ki) {
    std::fill(p.begin(), p.end(), 0);
    for (int64_t pi = 0; pi < fs; ++pi) {
      int64_t flat = 0;
      bool inside = true;
      for (int d = 0; d < n; ++d) {
        const int64_t pos = p[d] * g.strides[d] - g.pads[d] + kk[d] * g.dilations[d];
        if (pos < 0 || pos >= to[d]) {
          inside = false;
          break;
        }
        flat = flat * to[d] + pos;
      }
      table[static_cast<size_t>(ki * fs + pi)] = inside ? flat : -1;
      for (int d = n - 1; d >= 0; --d) {
        if (++p[d] < from[d]) break;
        p[d] = 0;
      }
    }
    for (int d = n - 1; d >= 0; --d) {
      if (++kk[d] < g.kernel[d]) break;
      kk[d] = 0;
    }
  }
  return table;
}

// Attributes common to Conv and ConvTranspose.
struct ConvAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  bool has_pads = false;

  Status read(const ir::Node& node) {
    SDX_ASSIGN_OR_RETURN(auto_pad, parse_auto_pad(node.attr_string("auto_pad", "NOTSET")), "auto_pad");
    group = node.attr_int("group", 1);
    if (group <= 0) return invalid_argument("group must be positive");
    kernel_shape = node.attr_ints("kernel_shape");
    strides = node.attr_ints("strides");
    dilations = node.attr_ints("dilations");
    pads = node.attr_ints("pads");
    has_pads = !pads.empty();
    return Status::ok();
  }

  // Geometry for a weight of shape [*, *, k...] (kernel_shape defaults to the weight's).
  Result<WindowGeometry> geometry(const Shape& w) const {
    WindowGeometry g;
    g.kernel = kernel_shape.empty() ? std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()) : kernel_shape;
    if (static_cast<int>(g.kernel.size()) != w.rank() - 2) {
      return invalid_argument("kernel_shape " + dims_to_string(g.kernel) + " does not match weight " +
                              w.to_string());
    }
    for (int i = 0; i < static_cast<int>(g.kernel.size()); ++i) {
      if (g.kernel[i] != w[i + 2]) {
        return invalid_argument("kernel_shape " + dims_to_string(g.kernel) + " does not match weight " +
                                w.to_string());
      }
    }
    SDX_RETURN_IF_ERROR(g.set_params(strides, dilations, pads), "");
    return g;
  }
};

class ConvKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    return attrs_.read(node);
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.rank() < 3) return invalid_argument("Conv input X must have rank >= 3, got " + x.shape().to_string());
    if (w.rank() != x.rank()) {
      return invalid_argument("Conv weight " + w.shape().to_string() + " must have the rank of X " +
                              x.shape().to_string());
    }
    if (w.dtype() != x.dtype()) return invalid_argument("Conv weight must have the element type of X");
    SDX_ASSIGN_OR_RETURN(WindowGeometry g, attrs_.geometry(w.shape()), "Conv");
    const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0], G = attrs_.group;
    if (C % G != 0 || M % G != 0 || w.shape()[1] * G != C) {
      return invalid_argument("Conv channels do not match: X " + x.shape().to_string() + ", W " +
                              w.shape().to_string() + ", group " + std::to_string(G));
    }
    if (ctx.has_input(2) && (ctx.input(2).rank() != 1 || ctx.input(2).shape()[0] != M)) {
      return invalid_argument("Conv bias must have shape [" + std::to_string(M) + "]");
    }
    const std::vector<int64_t> in(x.shape().dims().begin() + 2, x.shape().dims().end());
    SDX_RETURN_IF_ERROR(g.resolve(in, attrs_.auto_pad, false), "Conv");
    std::vector<int64_t> out_dims = {N, M};
    out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "Conv output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
    if (y.numel() == 0) return Status::ok();

    return dispatch<float, double, Float16, BFloat16>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using Cp = compute_t<T>;
          ComputeView<T> xv(x), wv(w);
          ComputeOut<T> yo(y);
          const int64_t is = product(in), os = product(g.out), ks = product(g.kernel);
          const int64_t Cg = C / G, Mg = M / G, rows = Cg * ks;
          // A 1x1 kernel with unit strides and no padding reads X as the column matrix directly.
          bool pointwise = ks == 1 && is == os;
          for (int d = 0; d < g.rank(); ++d) pointwise = pointwise && g.strides[d] == 1 && g.pads[d] == 0;
          const std::vector<int64_t> table = pointwise ? std::vector<int64_t>() : window_table(g.out, in, g);
          // Output positions are processed in chunks so the column buffer stays a few MB.
          const int64_t chunk =
              pointwise ? os : std::min(os, std::max<int64_t>(256, kColBudget / std::max<int64_t>(rows, 1)));
          std::vector<Cp> col(pointwise ? 0 : static_cast<size_t>(rows * chunk));
          const Cp* bias = nullptr;
          std::optional<ComputeView<T>> bv;
          if (ctx.has_input(2)) {
            bv.emplace(ctx.input(2));
            bias = bv->data();
          }
          for (int64_t n = 0; n < N; ++n) {
            for (int64_t gi = 0; gi < G; ++gi) {
              const Cp* wg = wv.data() + gi * Mg * rows;
              Cp* yg = yo.data() + (n * M + gi * Mg) * os;
              if (pointwise) {
                gemm(false, false, Mg, os, rows, Cp(1), wg, rows, xv.data() + (n * C + gi * Cg) * is, os, Cp(0), yg, os);
              }
              for (int64_t o0 = 0; !pointwise && o0 < os; o0 += chunk) {
                const int64_t cn = std::min(chunk, os - o0);
                for (int64_t c = 0; c < Cg; ++c) {
                  const Cp* xc = xv.data() + (n * C + gi * Cg + c) * is;
                  for (int64_t k = 0; k < ks; ++k) {
                    const int64_t* t = table.data() + k * os + o0;
                    Cp* dst = col.data() + (c * ks + k) * cn;
                    for (int64_t o = 0; o < cn; ++o) dst[o] = t[o] >= 0 ? xc[t[o]] : Cp(0);
                  }
                }
                gemm(false, false, Mg, cn, rows, Cp(1), wg, rows, col.data(), cn, Cp(0), yg + o0, os);
              }
              if (bias) {
                for (int64_t m = 0; m < Mg; ++m)
                  for (int64_t o = 0; o < os; ++o) yg[m * os + o] += bias[gi * Mg + m];
              }
            }
          }
          yo.commit();
          return Status::ok();
        },
        "Conv");
  }

 private:
  ConvAttrs attrs_;
};

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
          const std::vector<int64_t> table = window_table(in, out, g);
          std::vector<Cp> col(static_cast<size_t>(rows * is));
          std::optional<ComputeView<T>> bv;
          if (ctx.has_input(2)) bv.emplace(ctx.input(2));
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
