// Conv as im2col + gemm, shared by the Conv / ConvTranspose kernels (kernels/nn_conv.cc)
// and the fused sdx.FusedConv (kernels/fused_conv.cc), so the fused op computes exactly
// what Conv computes and then applies its epilogue in the same loop that adds the bias.
//
//   ConvAttrs attrs;  SDX_RETURN_IF_ERROR(attrs.read(node), "");            // init()
//   SDX_ASSIGN_OR_RETURN(ConvPlan p, ConvPlan::make(attrs, x.shape(), w.shape(), bias_shape, "Conv"), "");
//   std::vector<float> col(p.col_size());
//   conv_forward<float>(p, x, w, bias, y, col.data(), [](float v) { return v; });
//
// The plan holds every shape decision and the window index table, so a bound call makes
// one plan in prepare() and replays conv_forward with no allocation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/conv_util.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/small_m_gemm.h"

namespace sdx::cpu {

// Elements of the im2col buffer Conv fills at a time (4 MB of floats).
inline constexpr int64_t kConvColBudget = int64_t{1} << 20;

// table[kk * count(from) + p] = flat index in `to` of position p (in `from`) shifted by kernel
// offset kk, or -1 when it falls outside `to`. forward: to_pos = p * s - pad + k * d (Conv);
// otherwise the ConvTranspose mapping to_pos = p * s - pad + k * d with `from` the input.
inline std::vector<int64_t> window_table(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
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
      return invalid_argument("kernel_shape " + dims_to_string(g.kernel) + " does not match weight " + w.to_string());
    }
    for (int i = 0; i < static_cast<int>(g.kernel.size()); ++i) {
      if (g.kernel[i] != w[i + 2]) {
        return invalid_argument("kernel_shape " + dims_to_string(g.kernel) + " does not match weight " + w.to_string());
      }
    }
    SDX_RETURN_IF_ERROR(g.set_params(strides, dilations, pads), "");
    return g;
  }
};

// Every size of one forward Conv call: X [N, C, in...], W [M, C/G, k...], Y [N, M, out...].
// X, W and the optional B and R all float32: the operands the float32-only convolution paths
// (depthwise, frames, oneDNN) take.
inline bool conv_operands_float32(const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* r) {
  return x.dtype() == DType::kFloat32 && w.dtype() == DType::kFloat32 && (!b || b->dtype() == DType::kFloat32) &&
         (!r || r->dtype() == DType::kFloat32);
}

struct ConvPlan {
  WindowGeometry g;
  int64_t N = 0, C = 0, M = 0, G = 1;
  int64_t is = 0, os = 0, ks = 0, Cg = 0, Mg = 0, rows = 0, chunk = 0;
  bool pointwise = false;      // 1x1 kernel, unit strides, no padding: X is the column matrix
  std::vector<int64_t> in;     // input spatial sizes
  std::vector<int64_t> table;  // window_table(out, in) unless pointwise
  Shape out_shape;

  // Validates the shapes (the messages name `op`); bias: the bias shape or null.
  static Result<ConvPlan> make(const ConvAttrs& attrs, const Shape& x, const Shape& w, const Shape* bias,
                               const std::string& op) {
    ConvPlan p;
    if (x.rank() < 3) return invalid_argument(op + " input X must have rank >= 3, got " + x.to_string());
    if (w.rank() != x.rank())
      return invalid_argument(op + " weight " + w.to_string() + " must have the rank of X " + x.to_string());
    SDX_ASSIGN_OR_RETURN(p.g, attrs.geometry(w), op);
    p.N = x[0];
    p.C = x[1];
    p.M = w[0];
    p.G = attrs.group;
    if (p.C % p.G != 0 || p.M % p.G != 0 || w[1] * p.G != p.C) {
      return invalid_argument(op + " channels do not match: X " + x.to_string() + ", W " + w.to_string() + ", group " +
                              std::to_string(p.G));
    }
    if (bias && (bias->rank() != 1 || (*bias)[0] != p.M))
      return invalid_argument(op + " bias must have shape [" + std::to_string(p.M) + "]");
    p.in.assign(x.dims().begin() + 2, x.dims().end());
    const std::vector<int64_t>& in = p.in;
    SDX_RETURN_IF_ERROR(p.g.resolve(in, attrs.auto_pad, false), op);
    std::vector<int64_t> out_dims = {p.N, p.M};
    out_dims.insert(out_dims.end(), p.g.out.begin(), p.g.out.end());
    SDX_ASSIGN_OR_RETURN(p.out_shape, Shape::make(out_dims), op + " output");
    if (p.out_shape.numel() == 0) return p;
    p.is = product(in);
    p.os = product(p.g.out);
    p.ks = product(p.g.kernel);
    p.Cg = p.C / p.G;
    p.Mg = p.M / p.G;
    p.rows = p.Cg * p.ks;
    p.pointwise = p.ks == 1 && p.is == p.os;
    for (int d = 0; d < p.g.rank(); ++d) p.pointwise = p.pointwise && p.g.strides[d] == 1 && p.g.pads[d] == 0;
    if (!p.pointwise) p.table = window_table(p.g.out, in, p.g);
    // Output positions are processed in chunks so the column buffer stays a few MB.
    p.chunk =
        p.pointwise ? p.os : std::min(p.os, std::max<int64_t>(256, kConvColBudget / std::max<int64_t>(p.rows, 1)));
    return p;
  }

  // Elements of the im2col buffer conv_forward needs.
  int64_t col_size() const { return pointwise && !narrow() ? 0 : rows * chunk; }
  // At most this many output positions per image (a 1-D conv over a few frames, an STFT as a strided
  // conv) and the product runs transposed, Y^T = col^T W^T: one dot product of a column with a weight row
  // per output (narrow_sgemm), reading W as it is, instead of packing all of W on every call for a
  // few columns (silero v5's STFT conv, 258 x 256 weights at 4 positions: 41 -> 9 us).
  bool narrow() const { return os <= kSmallMMaxRows; }
  // Elements of the gemm workspace conv_forward needs (the narrow path keeps Y^T in front of its product's).
  int64_t workspace_size() const {
    if (!narrow()) return gemm_workspace_size(std::max(chunk, os), rows);
    return os * Mg + gemm_workspace_size(Mg, rows);
  }
};

// No epilogue: plain Conv (the bias loop is skipped entirely without a bias).
struct NoConvEpilogue {
  template <typename C>
  C operator()(C x) const {
    return x;
  }
};

// One (image, group) block of the narrow path: col^T [os, rows] (im2col transposed), Y^T [os, Mg] =
// col^T W^T in front of the workspace, then Y [Mg, os]. xg: the group's first input channel.
template <typename C>
void conv_narrow_block(const ConvPlan& p, const C* xg, const C* wg, C* yg, C* col, C* workspace) {
  const int64_t os = p.os, rows = p.rows, ks = p.ks;
  for (int64_t c = 0; c < p.Cg; ++c) {
    const C* xc = xg + c * p.is;
    for (int64_t k = 0; k < ks; ++k) {
      C* dst = col + c * ks + k;
      if (p.pointwise) {
        for (int64_t o = 0; o < os; ++o) dst[o * rows] = xc[o];
      } else {
        const int64_t* t = p.table.data() + k * os;
        for (int64_t o = 0; o < os; ++o) dst[o * rows] = t[o] >= 0 ? xc[t[o]] : C(0);
      }
    }
  }
  C* yt = workspace;
  gemm(false, true, os, p.Mg, rows, C(1), col, rows, wg, rows, C(0), yt, p.Mg, workspace + os * p.Mg);
  for (int64_t m = 0; m < p.Mg; ++m)
    for (int64_t o = 0; o < os; ++o) yg[m * os + o] = yt[o * p.Mg + m];
}

// y = epilogue(conv(x, w) + bias) over compute-type buffers (bias may be null). col holds
// p.col_size() elements, workspace p.workspace_size(). The epilogue runs on each (image,
// group) block right after its gemm, while the block is still in cache.
template <typename C, typename Epilogue>
void conv_forward(const ConvPlan& p, const C* x, const C* w, const C* bias, C* y, C* col, C* workspace,
                  const Epilogue& epilogue) {
  if (p.out_shape.numel() == 0) return;
  const int64_t os = p.os, is = p.is, rows = p.rows, chunk = p.chunk, ks = p.ks;
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t gi = 0; gi < p.G; ++gi) {
      const C* wg = w + gi * p.Mg * rows;
      C* yg = y + (n * p.M + gi * p.Mg) * os;
      if (p.narrow()) {
        conv_narrow_block(p, x + (n * p.C + gi * p.Cg) * is, wg, yg, col, workspace);
      } else if (p.pointwise)
        gemm(false, false, p.Mg, os, rows, C(1), wg, rows, x + (n * p.C + gi * p.Cg) * is, os, C(0), yg, os, workspace);
      for (int64_t o0 = 0; !p.pointwise && !p.narrow() && o0 < os; o0 += chunk) {
        const int64_t cn = std::min(chunk, os - o0);
        for (int64_t c = 0; c < p.Cg; ++c) {
          const C* xc = x + (n * p.C + gi * p.Cg + c) * is;
          for (int64_t k = 0; k < ks; ++k) {
            const int64_t* t = p.table.data() + k * os + o0;
            C* dst = col + (c * ks + k) * cn;
            for (int64_t o = 0; o < cn; ++o) dst[o] = t[o] >= 0 ? xc[t[o]] : C(0);
          }
        }
        gemm(false, false, p.Mg, cn, rows, C(1), wg, rows, col, cn, C(0), yg + o0, os, workspace);
      }
      if constexpr (std::is_same_v<Epilogue, NoConvEpilogue>) {
        if (bias) {
          for (int64_t m = 0; m < p.Mg; ++m)
            for (int64_t o = 0; o < os; ++o) yg[m * os + o] += bias[gi * p.Mg + m];
        }
      } else {
        for (int64_t m = 0; m < p.Mg; ++m)
          epilogue_row(epilogue, yg + m * os, bias ? bias + gi * p.Mg + m : nullptr, os, /*b_step=*/0);
      }
    }
  }
}

}  // namespace sdx::cpu
