// Tensor-manipulation kernels that read a window of the input: Slice, Pad, CenterCropPad.
#include <algorithm>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// ---- Slice: starts/ends/axes/steps as inputs (opset 10+) or attributes (opset 1-9).
class SliceKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    from_attrs_ = node.opset() < 10;
    if (from_attrs_) {
      starts_ = node.attr_ints("starts");
      ends_ = node.attr_ints("ends");
      if (node.attr("axes")) {
        axes_ = node.attr_ints("axes");
        has_axes_ = true;
      }
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    bool has_axes = has_axes_;
    if (!from_attrs_) {
      if (!ctx.has_input(1) || !ctx.has_input(2)) return invalid_argument("Slice needs starts and ends inputs");
      SDX_ASSIGN_OR_RETURN(starts, read_int64s(ctx.input(1), "Slice starts"), "");
      SDX_ASSIGN_OR_RETURN(ends, read_int64s(ctx.input(2), "Slice ends"), "");
      has_axes = ctx.has_input(3);
      if (has_axes) {
        SDX_ASSIGN_OR_RETURN(axes, read_int64s(ctx.input(3), "Slice axes"), "");
      }
      if (ctx.has_input(4)) {
        SDX_ASSIGN_OR_RETURN(steps, read_int64s(ctx.input(4), "Slice steps"), "");
      }
    }
    const size_t n = starts.size();
    if (ends.size() != n) return invalid_argument("Slice starts and ends differ in length");
    if (!has_axes) {
      axes.resize(n);
      for (size_t i = 0; i < n; ++i) axes[i] = static_cast<int64_t>(i);
    }
    if (steps.empty()) steps.assign(n, 1);
    if (axes.size() != n || steps.size() != n)
      return invalid_argument("Slice starts, ends, axes and steps must have the same length");

    std::vector<int64_t> out_dims = x.shape().dims();
    std::vector<int64_t> strides = contiguous_strides(x.shape().dims());
    std::vector<int64_t> in_strides = strides;
    std::vector<bool> seen(static_cast<size_t>(r), false);
    int64_t base = 0;
    for (size_t i = 0; i < n; ++i) {
      SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axes[i], r), "Slice axes");
      size_t a = static_cast<size_t>(ax);
      if (seen[a]) return invalid_argument("Slice axes repeat axis " + std::to_string(axes[i]));
      seen[a] = true;
      const int64_t dim = x.shape()[ax];
      int64_t step = steps[i];
      if (step == 0) return invalid_argument("Slice step must not be zero");
      // A step longer than the axis selects at most one element; clamping it keeps
      // the stride arithmetic below free of overflow without changing the result.
      step = std::clamp<int64_t>(step, -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
      int64_t start = starts[i], end = ends[i];
      if (start < 0) start += dim;
      if (end < 0) end += dim;
      int64_t count = 0;
      if (dim == 0) {
        start = 0;  // empty axis: nothing to read
      } else if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        if (end > start) count = (end - start - 1) / step + 1;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        if (start > end) count = (start - end - 1) / (-step) + 1;
      }
      out_dims[a] = count;
      if (count > 0) base += start * strides[a];
      in_strides[a] = strides[a] * step;
    }
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "Slice output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
    return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      strided_copy(x.data<T>(), base, in_strides, out_dims, y.data<T>());
      return Status::ok();
    }, "Slice");
  }

 private:
  bool from_attrs_ = false;
  bool has_axes_ = false;
  std::vector<int64_t> starts_, ends_, axes_;
};
const backend::KernelRegistrar kSlice({"Slice", "", 1, backend::kAnyOpset, backend::kernel_factory<SliceKernel>()});

// y[i0, i1, ...] = x[maps[0][i0] + maps[1][i1] + ...] (maps hold element offsets), or fill
// where any map entry is -1.
template <typename T>
void gather_by_dim_maps(const T* x, const std::vector<std::vector<int64_t>>& maps, const std::vector<int64_t>& out_dims,
                        const T& fill, T* y) {
  const int r = static_cast<int>(out_dims.size());
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  if (r == 0) {
    y[0] = x[0];
    return;
  }
  const std::vector<int64_t>& inner_map = maps[static_cast<size_t>(r - 1)];
  const int64_t inner = out_dims[static_cast<size_t>(r - 1)];
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t out = 0; out < total; out += inner) {
    int64_t base = 0;
    bool valid = true;
    for (int d = 0; d < r - 1; ++d) {
      int64_t m = maps[static_cast<size_t>(d)][static_cast<size_t>(idx[static_cast<size_t>(d)])];
      if (m < 0) valid = false;
      base += m;
    }
    for (int64_t k = 0; k < inner; ++k) {
      int64_t m = inner_map[static_cast<size_t>(k)];
      y[out + k] = (valid && m >= 0) ? x[base + m] : fill;
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < out_dims[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

// Allocates output 0 with out_dims, then builds per-dim maps with make_map(d, out_dims[d])
// (only for a non-empty output, so map sizes are bounded by the allocated output) and
// runs gather_by_dim_maps; fill is a 1-element tensor of x's dtype.
template <typename MakeMap>
Status run_dim_maps(KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& out_dims, const Tensor& fill,
                    MakeMap&& make_map) {
  SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), ctx.node().op_type() + " output");
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
  if (out_shape.numel() == 0) return Status::ok();
  std::vector<std::vector<int64_t>> maps(out_dims.size());
  for (size_t d = 0; d < out_dims.size(); ++d) maps[d] = make_map(static_cast<int>(d), out_dims[d]);
  return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    gather_by_dim_maps(x.data<T>(), maps, out_dims, fill.data<T>()[0], y.data<T>());
    return Status::ok();
  }, ctx.node().op_type());
}

Result<Tensor> zero_scalar(DType dt) { return Tensor::allocate(dt, Shape(), cpu_allocator(), /*zero=*/true); }

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// ---- Pad: constant / reflect / edge / wrap; negative pads crop.
class PadKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    std::string mode = node.attr_string("mode", "constant");
    if (mode == "constant") mode_ = PadMode::kConstant;
    else if (mode == "reflect") mode_ = PadMode::kReflect;
    else if (mode == "edge") mode_ = PadMode::kEdge;
    else if (mode == "wrap") mode_ = PadMode::kWrap;
    else return invalid_argument("Pad mode '" + mode + "' is not one of constant, reflect, edge, wrap");
    from_attrs_ = node.opset() < 11;
    if (from_attrs_) {
      pads_ = node.attr_ints(node.opset() < 2 ? "paddings" : "pads");
      value_ = node.attr_float("value", 0.f);
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    std::vector<int64_t> pads = pads_, axes;
    SDX_ASSIGN_OR_RETURN(Tensor fill, zero_scalar(x.dtype()), "");
    if (from_attrs_) {
      SDX_RETURN_IF_ERROR((dispatch<SDX_NUMERIC_TYPES>(x.dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        fill.data<T>()[0] = from_f32<T>(value_);
        return Status::ok();
      }, "Pad")), "");
    } else {
      SDX_ASSIGN_OR_RETURN(pads, read_int64s(ctx.input(1), "Pad pads"), "");
      if (ctx.has_input(2)) {
        const Tensor& cv = ctx.input(2);
        if (cv.dtype() != x.dtype() || cv.numel() != 1)
          return invalid_argument("Pad constant_value must be one element of the input's type, got " + cv.type_string());
        fill = cv;
      }
      if (ctx.has_input(3)) {
        SDX_ASSIGN_OR_RETURN(axes, read_int64s(ctx.input(3), "Pad axes"), "");
      }
    }
    if (axes.empty()) {
      for (int i = 0; i < r; ++i) axes.push_back(i);
    }
    const size_t na = axes.size();
    if (pads.size() != 2 * na)
      return invalid_argument("Pad pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * na));
    std::vector<int64_t> begin(static_cast<size_t>(r), 0), end(static_cast<size_t>(r), 0);
    for (size_t i = 0; i < na; ++i) {
      SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axes[i], r), "Pad axes");
      begin[static_cast<size_t>(ax)] = pads[i];
      end[static_cast<size_t>(ax)] = pads[na + i];
    }
    std::vector<int64_t> strides = contiguous_strides(x.shape().dims());
    std::vector<int64_t> out_dims(static_cast<size_t>(r));
    for (int d = 0; d < r; ++d) {
      size_t ud = static_cast<size_t>(d);
      const int64_t n = x.shape()[d];
      constexpr int64_t kMaxPad = int64_t{1} << 40;
      if (begin[ud] < -kMaxPad || begin[ud] > kMaxPad || end[ud] < -kMaxPad || end[ud] > kMaxPad)
        return invalid_argument("Pad pads " + dims_to_string(pads) + " are out of range");
      SDX_ASSIGN_OR_RETURN(int64_t sum, checked_add(n, begin[ud]), "Pad");
      SDX_ASSIGN_OR_RETURN(int64_t out, checked_add(sum, end[ud]), "Pad");
      if (out < 0) return invalid_argument("Pad crops more than the size of axis " + std::to_string(d));
      out_dims[ud] = out;
      if (out > 0 && n == 0 && mode_ != PadMode::kConstant)
        return invalid_argument("Pad cannot use a non-constant mode on an empty axis " + std::to_string(d));
    }
    return run_dim_maps(ctx, x, out_dims, fill, [&](int d, int64_t out) {
      const size_t ud = static_cast<size_t>(d);
      const int64_t n = x.shape()[d];
      std::vector<int64_t> m(static_cast<size_t>(out));
      for (int64_t i = 0; i < out; ++i) {
        int64_t s = i - begin[ud];
        if (s < 0 || s >= n) {
          switch (mode_) {
            case PadMode::kConstant: s = -1; break;
            case PadMode::kEdge: s = s < 0 ? 0 : n - 1; break;
            case PadMode::kWrap: s = ((s % n) + n) % n; break;
            case PadMode::kReflect: {
              if (n == 1) {
                s = 0;
                break;
              }
              const int64_t period = 2 * (n - 1);
              s = ((s % period) + period) % period;
              if (s >= n) s = period - s;
              break;
            }
          }
        }
        m[static_cast<size_t>(i)] = s < 0 ? -1 : s * strides[ud];
      }
      return m;
    });
  }

 private:
  PadMode mode_ = PadMode::kConstant;
  bool from_attrs_ = false;
  std::vector<int64_t> pads_;
  float value_ = 0.f;
};
const backend::KernelRegistrar kPad({"Pad", "", 1, backend::kAnyOpset, backend::kernel_factory<PadKernel>()});

// ---- CenterCropPad: centers the input in a window of the given sizes (crop or zero-pad).
class CenterCropPadKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axes_ = node.attr_ints("axes");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, read_int64s(ctx.input(1), "CenterCropPad shape"), "");
    std::vector<int64_t> axes = axes_;
    if (axes.empty())
      for (int i = 0; i < r; ++i) axes.push_back(i);
    if (sizes.size() != axes.size())
      return invalid_argument("CenterCropPad shape has " + std::to_string(sizes.size()) + " values for " +
                              std::to_string(axes.size()) + " axes");
    std::vector<int64_t> out_dims = x.shape().dims();
    for (size_t i = 0; i < axes.size(); ++i) {
      SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axes[i], r), "CenterCropPad axes");
      if (sizes[i] < 0) return invalid_argument("CenterCropPad shape has a negative size");
      out_dims[static_cast<size_t>(ax)] = sizes[i];
    }
    std::vector<int64_t> strides = contiguous_strides(x.shape().dims());
    SDX_ASSIGN_OR_RETURN(Tensor fill, zero_scalar(x.dtype()), "");
    return run_dim_maps(ctx, x, out_dims, fill, [&](int d, int64_t out) {
      const int64_t n = x.shape()[d];
      // Cropping starts (n - out) / 2 into the input; padding puts the input (out - n) / 2 in.
      const int64_t shift = out <= n ? (n - out) / 2 : -((out - n) / 2);
      std::vector<int64_t> m(static_cast<size_t>(out));
      for (int64_t i = 0; i < out; ++i) {
        const int64_t s = i + shift;
        m[static_cast<size_t>(i)] = (s < 0 || s >= n) ? -1 : s * strides[static_cast<size_t>(d)];
      }
      return m;
    });
  }

 private:
  std::vector<int64_t> axes_;
};
const backend::KernelRegistrar kCenterCropPad(
    {"CenterCropPad", "", 18, backend::kAnyOpset, backend::kernel_factory<CenterCropPadKernel>()});

}  // namespace
}  // namespace sdx::cpu
