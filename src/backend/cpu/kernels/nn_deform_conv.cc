// DeformConv (2-D): convolution whose sampling positions are shifted by learned offsets
// (and optionally scaled by a mask). Sampled columns are built per group (bilinear
// interpolation, zero outside the image), then multiplied with the weights by gemm.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/kernels/util/conv_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// Bilinear sample of plane (H x W) at (h, w); corners outside the plane read as zero.
template <typename C>
C bilinear_zero(const C* plane, int64_t H, int64_t W, C h, C w) {
  const C hf = std::floor(h), wf = std::floor(w);
  const int64_t h0 = static_cast<int64_t>(hf), w0 = static_cast<int64_t>(wf);
  const C lh = h - hf, lw = w - wf;
  auto at = [&](int64_t y, int64_t x) -> C { return y >= 0 && y < H && x >= 0 && x < W ? plane[y * W + x] : C(0); };
  return (1 - lh) * (1 - lw) * at(h0, w0) + (1 - lh) * lw * at(h0, w0 + 1) + lh * (1 - lw) * at(h0 + 1, w0) +
         lh * lw * at(h0 + 1, w0 + 1);
}

class DeformConvKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    group_ = node.attr_int("group", 1);
    offset_group_ = node.attr_int("offset_group", 1);
    if (group_ <= 0 || offset_group_ <= 0) return invalid_argument("group and offset_group must be positive");
    kernel_shape_ = node.attr_ints("kernel_shape");
    strides_ = node.attr_ints("strides");
    dilations_ = node.attr_ints("dilations");
    pads_ = node.attr_ints("pads");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& off = ctx.input(2);
    if (x.rank() != 4 || w.rank() != 4 || off.rank() != 4) {
      return unimplemented("DeformConv supports 2-D inputs only (X, W and offset of rank 4)");
    }
    if (w.dtype() != x.dtype() || off.dtype() != x.dtype()) {
      return invalid_argument("DeformConv inputs must share one element type");
    }
    WindowGeometry g;
    g.kernel = kernel_shape_.empty() ? std::vector<int64_t>{w.shape()[2], w.shape()[3]} : kernel_shape_;
    if (g.kernel.size() != 2 || g.kernel[0] != w.shape()[2] || g.kernel[1] != w.shape()[3]) {
      return invalid_argument("kernel_shape does not match weight " + w.shape().to_string());
    }
    SDX_RETURN_IF_ERROR(g.set_params(strides_, dilations_, pads_), "DeformConv");
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t M = w.shape()[0], G = group_, OG = offset_group_;
    if (C % G != 0 || M % G != 0 || w.shape()[1] * G != C || C % OG != 0) {
      return invalid_argument("DeformConv channels do not match: X " + x.shape().to_string() + ", W " +
                              w.shape().to_string());
    }
    SDX_RETURN_IF_ERROR(g.resolve({H, W}, AutoPad::kNotSet, false), "DeformConv");
    const int64_t oh = g.out[0], ow = g.out[1], ks = g.kernel[0] * g.kernel[1];
    if (off.shape() != Shape{N, OG * 2 * ks, oh, ow}) {
      return invalid_argument("offset " + off.shape().to_string() + " must be [" + std::to_string(N) + ", " +
                              std::to_string(OG * 2 * ks) + ", " + std::to_string(oh) + ", " + std::to_string(ow) +
                              "]");
    }
    const bool has_bias = ctx.has_input(3), has_mask = ctx.has_input(4);
    if (has_bias && (ctx.input(3).rank() != 1 || ctx.input(3).shape()[0] != M)) {
      return invalid_argument("DeformConv bias must have shape [" + std::to_string(M) + "]");
    }
    if (has_mask && ctx.input(4).shape() != Shape{N, OG * ks, oh, ow}) {
      return invalid_argument("mask " + ctx.input(4).shape().to_string() + " must be [" + std::to_string(N) + ", " +
                              std::to_string(OG * ks) + ", " + std::to_string(oh) + ", " + std::to_string(ow) + "]");
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape{N, M, oh, ow}), "");
    if (y.numel() == 0) return Status::ok();

    return dispatch<float, double, Float16, BFloat16>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using Cp = compute_t<T>;
          ComputeView<T> xv(x), wv(w), ov(off);
          std::optional<ComputeView<T>> bv, mv;
          if (has_bias) bv.emplace(ctx.input(3));
          if (has_mask) mv.emplace(ctx.input(4));
          ComputeOut<T> yo(y);
          const int64_t os = oh * ow, Cg = C / G, Mg = M / G, rows = Cg * ks, c_per_og = C / OG;
          std::vector<Cp> col(static_cast<size_t>(rows * os));
          for (int64_t n = 0; n < N; ++n) {
            for (int64_t gi = 0; gi < G; ++gi) {
              for (int64_t c = 0; c < Cg; ++c) {
                const int64_t ch = gi * Cg + c, og = ch / c_per_og;
                const Cp* plane = xv.data() + (n * C + ch) * H * W;
                for (int64_t k = 0; k < ks; ++k) {
                  const int64_t kh = k / g.kernel[1], kw = k % g.kernel[1];
                  const Cp* off_h = ov.data() + ((n * OG + og) * 2 * ks + 2 * k) * os;
                  const Cp* off_w = off_h + os;
                  const Cp* mask = mv ? mv->data() + ((n * OG + og) * ks + k) * os : nullptr;
                  Cp* dst = col.data() + (c * ks + k) * os;
                  for (int64_t i = 0; i < oh; ++i) {
                    for (int64_t j = 0; j < ow; ++j) {
                      const int64_t o = i * ow + j;
                      const Cp h = static_cast<Cp>(i * g.strides[0] - g.pads[0] + kh * g.dilations[0]) + off_h[o];
                      const Cp wpos = static_cast<Cp>(j * g.strides[1] - g.pads[1] + kw * g.dilations[1]) + off_w[o];
                      Cp v = bilinear_zero(plane, H, W, h, wpos);
                      if (mask) v *= mask[o];
                      dst[o] = v;
                    }
                  }
                }
              }
              Cp* yg = yo.data() + (n * M + gi * Mg) * os;
              gemm(false, false, Mg, os, rows, Cp(1), wv.data() + gi * Mg * rows, rows, col.data(), os, Cp(0), yg,
                   os);
              if (bv) {
                for (int64_t m = 0; m < Mg; ++m)
                  for (int64_t o = 0; o < os; ++o) yg[m * os + o] += bv->data()[gi * Mg + m];
              }
            }
          }
          yo.commit();
          return Status::ok();
        },
        "DeformConv");
  }

 private:
  int64_t group_ = 1, offset_group_ = 1;
  std::vector<int64_t> kernel_shape_, strides_, dilations_, pads_;
};

const backend::KernelRegistrar kDeformConv({"DeformConv", "", 19, backend::kAnyOpset,
                                            backend::kernel_factory<DeformConvKernel>()});

}  // namespace
}  // namespace sdx::cpu
