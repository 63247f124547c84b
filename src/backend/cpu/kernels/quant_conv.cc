// ConvInteger and QLinearConv: direct N-D convolution of int8/uint8 data accumulated
// in int32 (zero points subtracted before padding, so padding contributes zero);
// QLinearConv adds an int32 bias and requantizes like onnx's reference.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernels/util/conv_util.h"
#include "backend/cpu/quant/quant_util.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

bool is_8bit_int(DType t) { return t == DType::kInt8 || t == DType::kUint8; }

struct ConvAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  int64_t group = 1;

  Status parse(const ir::Node& node) {
    SDX_ASSIGN_OR_RETURN(auto_pad, parse_auto_pad(node.attr_string("auto_pad", "NOTSET")), "attribute 'auto_pad'");
    kernel_shape = node.attr_ints("kernel_shape");
    strides = node.attr_ints("strides");
    dilations = node.attr_ints("dilations");
    pads = node.attr_ints("pads");
    group = node.attr_int("group", 1);
    if (group <= 0) return invalid_argument("attribute 'group' must be positive");
    return Status::ok();
  }
};

struct ConvResult {
  Shape shape;
  std::vector<int32_t> values;
};

// out[n, m, o...] = sum over the group's channels and the window of (x - x_zp) * (w - w_zp[m]).
Result<ConvResult> conv_int32(const Tensor& x, const Tensor& w, int32_t x_zp, const std::vector<int32_t>& w_zp,
                              const ConvAttrs& attrs) {
  if (x.rank() < 3) return invalid_argument("x must have rank >= 3, has shape " + x.shape().to_string());
  if (w.rank() != x.rank())
    return invalid_argument("w of shape " + w.shape().to_string() + " must have the rank of x " + x.shape().to_string());
  const int nsp = x.rank() - 2;
  const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0], Cg = w.shape()[1];
  if (M % attrs.group != 0 || Cg * attrs.group != C)
    return invalid_argument("channels do not match: x " + x.shape().to_string() + ", w " + w.shape().to_string() +
                            ", group " + std::to_string(attrs.group));
  if (w_zp.size() != 1 && static_cast<int64_t>(w_zp.size()) != M)
    return invalid_argument("w_zero_point must hold one value or one per output channel (" + std::to_string(M) + ")");
  WindowGeometry g;
  g.kernel.assign(w.shape().dims().begin() + 2, w.shape().dims().end());
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape != g.kernel)
    return invalid_argument("attribute 'kernel_shape' " + dims_to_string(attrs.kernel_shape) + " differs from w's spatial dims " +
                            dims_to_string(g.kernel));
  SDX_RETURN_IF_ERROR(g.set_params(attrs.strides, attrs.dilations, attrs.pads), "conv attributes");
  const std::vector<int64_t> in_sp(x.shape().dims().begin() + 2, x.shape().dims().end());
  SDX_RETURN_IF_ERROR(g.resolve(in_sp, attrs.auto_pad, false), "conv geometry");

  std::vector<int64_t> out_dims = {N, M};
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  ConvResult r;
  SDX_ASSIGN_OR_RETURN(r.shape, Shape::make(out_dims), "conv output");
  r.values.assign(static_cast<size_t>(r.shape.numel()), 0);

  std::vector<int32_t> xv = load_all_as<int32_t>(x), wv = load_all_as<int32_t>(w);
  for (int32_t& v : xv) v -= x_zp;
  const int64_t wsz = w.numel() / std::max<int64_t>(M, 1);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < wsz; ++i) wv[static_cast<size_t>(m * wsz + i)] -= w_zp[w_zp.size() == 1 ? 0 : static_cast<size_t>(m)];

  const int64_t in_size = Shape(in_sp).numel(), out_size = Shape(g.out).numel(), k_size = Shape(g.kernel).numel();
  // Kernel offsets per spatial dim, enumerated once.
  std::vector<std::vector<int64_t>> koffs(static_cast<size_t>(k_size), std::vector<int64_t>(static_cast<size_t>(nsp)));
  for (int64_t k = 0; k < k_size; ++k) {
    int64_t rem = k;
    for (int d = nsp - 1; d >= 0; --d) {
      koffs[static_cast<size_t>(k)][static_cast<size_t>(d)] = (rem % g.kernel[d]) * g.dilations[d];
      rem /= g.kernel[d];
    }
  }
  const int64_t Mg = M / attrs.group;
  std::vector<int64_t> opos(static_cast<size_t>(nsp)), base(static_cast<size_t>(nsp));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / Mg;
      int32_t* out = r.values.data() + (n * M + m) * out_size;
      std::fill(opos.begin(), opos.end(), 0);
      for (int64_t o = 0; o < out_size; ++o) {
        for (int d = 0; d < nsp; ++d) base[d] = opos[d] * g.strides[d] - g.pads[d];
        int32_t acc = 0;
        for (int64_t c = 0; c < Cg; ++c) {
          const int32_t* xc = xv.data() + (n * C + grp * Cg + c) * in_size;
          const int32_t* wc = wv.data() + (m * Cg + c) * k_size;
          for (int64_t k = 0; k < k_size; ++k) {
            int64_t idx = 0;
            bool inside = true;
            for (int d = 0; d < nsp && inside; ++d) {
              const int64_t p = base[d] + koffs[static_cast<size_t>(k)][static_cast<size_t>(d)];
              inside = p >= 0 && p < in_sp[d];
              idx = idx * in_sp[d] + p;
            }
            if (inside) acc += xc[idx] * wc[k];
          }
        }
        out[o] = acc;
        for (int d = nsp - 1; d >= 0; --d) {
          if (++opos[d] < g.out[d]) break;
          opos[d] = 0;
        }
      }
    }
  return r;
}

Result<int32_t> scalar_zero_point(const backend::KernelContext& ctx, int i, const Tensor& data, const char* name) {
  if (!ctx.has_input(i)) return 0;
  const Tensor& z = ctx.input(i);
  if (z.dtype() != data.dtype())
    return invalid_argument(std::string(name) + " type " + dtype_name(z.dtype()) + " differs from " + dtype_name(data.dtype()));
  if (z.numel() != 1) return invalid_argument(std::string(name) + " must hold one value, has shape " + z.shape().to_string());
  return load_all_as<int32_t>(z)[0];
}

Result<std::vector<int32_t>> weight_zero_point(const backend::KernelContext& ctx, int i, const Tensor& w) {
  if (!ctx.has_input(i)) return std::vector<int32_t>{0};
  const Tensor& z = ctx.input(i);
  if (z.dtype() != w.dtype())
    return invalid_argument(std::string("w_zero_point type ") + dtype_name(z.dtype()) + " differs from " + dtype_name(w.dtype()));
  if (z.rank() > 1) return invalid_argument("w_zero_point must be a scalar or 1-D, has shape " + z.shape().to_string());
  return load_all_as<int32_t>(z);
}

class ConvIntegerKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override { return attrs_.parse(node); }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (!is_8bit_int(x.dtype()) || !is_8bit_int(w.dtype()))
      return invalid_argument(std::string("ConvInteger needs int8/uint8 inputs, got ") + dtype_name(x.dtype()) + " and " +
                              dtype_name(w.dtype()));
    SDX_ASSIGN_OR_RETURN(int32_t xzp, scalar_zero_point(ctx, 2, x, "x_zero_point"), "ConvInteger");
    SDX_ASSIGN_OR_RETURN(std::vector<int32_t> wzp, weight_zero_point(ctx, 3, w), "ConvInteger");
    SDX_ASSIGN_OR_RETURN(ConvResult r, conv_int32(x, w, xzp, wzp, attrs_), "ConvInteger");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt32, r.shape), "ConvInteger output");
    std::copy(r.values.begin(), r.values.end(), y.data<int32_t>());
    return Status::ok();
  }

 private:
  ConvAttrs attrs_;
};

class QLinearConvKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override { return attrs_.parse(node); }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(3);
    if (!is_8bit_int(x.dtype()) || !is_8bit_int(w.dtype()))
      return invalid_argument(std::string("QLinearConv needs int8/uint8 inputs, got ") + dtype_name(x.dtype()) + " and " +
                              dtype_name(w.dtype()));
    for (int i : {1, 4, 6})
      if (ctx.input(i).dtype() != DType::kFloat32)
        return invalid_argument("QLinearConv scales must be float; input " + std::to_string(i) + " is " +
                                dtype_name(ctx.input(i).dtype()));
    SDX_ASSIGN_OR_RETURN(int32_t xzp, scalar_zero_point(ctx, 2, x, "x_zero_point"), "QLinearConv");
    SDX_ASSIGN_OR_RETURN(std::vector<int32_t> wzp, weight_zero_point(ctx, 5, w), "QLinearConv");
    const DType out_t = ctx.has_input(7) ? ctx.input(7).dtype() : x.dtype();
    if (!is_8bit_int(out_t)) return invalid_argument(std::string("y_zero_point must be int8 or uint8, got ") + dtype_name(out_t));
    const double yzp = ctx.has_input(7) ? load_all_as<double>(ctx.input(7)).at(0) : 0.0;
    SDX_ASSIGN_OR_RETURN(ConvResult r, conv_int32(x, w, xzp, wzp, attrs_), "QLinearConv");
    const int64_t M = w.shape()[0];
    const std::vector<float> xs = load_all_as<float>(ctx.input(1)), ws = load_all_as<float>(ctx.input(4)),
                             ys = load_all_as<float>(ctx.input(6));
    if (xs.size() != 1 || ys.size() != 1) return invalid_argument("x_scale and y_scale must hold one value");
    if (!(std::isfinite(ys[0]) && ys[0] != 0)) return invalid_argument("y_scale must be finite and non-zero, got " + std::to_string(ys[0]));
    if (ws.size() != 1 && static_cast<int64_t>(ws.size()) != M)
      return invalid_argument("w_scale must hold one value or one per output channel (" + std::to_string(M) + ")");
    std::vector<int32_t> bias(static_cast<size_t>(M), 0);
    if (ctx.has_input(8)) {
      const Tensor& b = ctx.input(8);
      if (b.dtype() != DType::kInt32 || b.numel() != M)
        return invalid_argument("B must be int32 with one value per output channel, got " + b.type_string());
      bias = load_all_as<int32_t>(b);
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, out_t, r.shape), "QLinearConv output");
    const double lo = out_t == DType::kInt8 ? -128 : 0, hi = out_t == DType::kInt8 ? 127 : 255;
    const int64_t spatial = r.shape.numel() / std::max<int64_t>(1, r.shape[0] * M);
    for (size_t i = 0; i < r.values.size(); ++i) {
      const auto m = static_cast<size_t>((static_cast<int64_t>(i) / std::max<int64_t>(spatial, 1)) % M);
      // numpy: float32 multiplier, int32 * float32 promoted to float64.
      const float mult = xs[0] * ws[ws.size() == 1 ? 0 : m] / ys[0];
      const double v = std::nearbyint(std::clamp(static_cast<double>(r.values[i] + bias[m]) * mult + yzp, lo, hi));
      if (out_t == DType::kInt8) y.data<int8_t>()[i] = static_cast<int8_t>(v);
      else y.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    }
    return Status::ok();
  }

 private:
  ConvAttrs attrs_;
};

const backend::KernelRegistrar kConvInteger({"ConvInteger", "", 10, backend::kAnyOpset,
                                             backend::kernel_factory<ConvIntegerKernel>()});
const backend::KernelRegistrar kQLinearConv({"QLinearConv", "", 10, backend::kAnyOpset,
                                             backend::kernel_factory<QLinearConvKernel>()});

}  // namespace
}  // namespace sdx::cpu
