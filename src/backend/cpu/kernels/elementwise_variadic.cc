// Variadic and ternary element-wise ops with numpy broadcasting: Max, Min, Sum,
// Mean (1..N inputs), Where (condition, X, Y), Clip (bounds as attributes before
// opset 11, optional scalar inputs from 11).
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using NumericTypes = Types<SDX_NUMERIC_TYPES>;

// Max/Min propagate NaN like numpy.maximum/minimum.
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return a < b ? b : a;
  }
  template <typename C>
  C finish(C acc, int) const { return acc; }
};
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return b < a ? b : a;
  }
  template <typename C>
  C finish(C acc, int) const { return acc; }
};
struct SumOp {
  template <typename C>
  C operator()(C a, C b) const { return wrapping_add(a, b); }
  template <typename C>
  C finish(C acc, int) const { return acc; }
};
struct MeanOp {
  template <typename C>
  C operator()(C a, C b) const { return wrapping_add(a, b); }
  template <typename C>
  C finish(C acc, int n) const { return static_cast<C>(acc / static_cast<C>(n)); }
};

// Folds all inputs with Op into the broadcast output. The accumulator holds
// compute-type values so 16-bit floats are rounded once, at the end.
template <typename Op>
class VariadicKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    name_ = node.op_type();
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const int n = ctx.num_inputs();
    if (n < 1) return invalid_argument(name_ + " needs at least one input");
    std::vector<Shape> shapes;
    for (int i = 0; i < n; ++i) {
      if (!ctx.has_input(i)) return invalid_argument(name_ + " input " + std::to_string(i) + " is missing");
      shapes.push_back(ctx.input(i).shape());
    }
    SDX_RETURN_IF_ERROR(check_same_dtype(ctx, 0, n - 1), name_);
    SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make(shapes), name_);
    const DType dt = ctx.input(0).dtype();
    return dispatch<SDX_NUMERIC_TYPES>(dt, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, dt, plan.output_shape()), "");
      std::vector<const T*> in(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = ctx.input(i).data<T>();
      T* out = y.data<T>();
      const Op op;
      std::vector<C> acc;
      plan.for_each_run([&](int64_t o, const int64_t* off, const int64_t* step, int64_t count) {
        acc.resize(static_cast<size_t>(count));
        const T* p0 = in[0] + off[0];
        for (int64_t k = 0; k < count; ++k) acc[static_cast<size_t>(k)] = widen(p0[k * step[0]]);
        for (int i = 1; i < n; ++i) {
          const T* p = in[static_cast<size_t>(i)] + off[i];
          const int64_t s = step[i];
          for (int64_t k = 0; k < count; ++k) acc[static_cast<size_t>(k)] = op(acc[static_cast<size_t>(k)], widen(p[k * s]));
        }
        for (int64_t k = 0; k < count; ++k) out[o + k] = narrow<T>(op.finish(acc[static_cast<size_t>(k)], n));
      });
      return Status::ok();
    }, name_);
  }

 private:
  std::string name_;
};

class WhereKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& cond = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    if (cond.dtype() != DType::kBool)
      return invalid_argument(std::string("Where condition must be bool, got ") + dtype_name(cond.dtype()));
    SDX_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 2), "Where");
    SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make({cond.shape(), x.shape(), y.shape()}), "Where");
    return dispatch<SDX_ALL_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      SDX_ASSIGN_OR_RETURN(Tensor out, ctx.allocate_output(0, x.dtype(), plan.output_shape()), "");
      broadcast_map(plan, out.data<T>(), [](bool c, const T& a, const T& b) -> const T& { return c ? a : b; },
                    cond.data<bool>(), x.data<T>(), y.data<T>());
      return Status::ok();
    }, "Where");
  }
};

// Clip: y = min(max(x, lo), hi) (so lo > hi gives hi everywhere, like numpy.clip).
class ClipKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    legacy_ = node.opset() < 11;
    if (legacy_) {
      attr_min_ = node.attr_float("min", -std::numeric_limits<float>::infinity());
      attr_max_ = node.attr_float("max", std::numeric_limits<float>::infinity());
    }
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    for (int i = 1; i <= 2 && !legacy_; ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& b = ctx.input(i);
      if (b.dtype() != x.dtype())
        return invalid_argument(std::string("Clip ") + (i == 1 ? "min" : "max") + " has element type " +
                                dtype_name(b.dtype()) + " but input has " + dtype_name(x.dtype()));
      if (b.numel() != 1)
        return invalid_argument(std::string("Clip ") + (i == 1 ? "min" : "max") + " must be a scalar, got shape " +
                                b.shape().to_string());
    }
    return dispatch<SDX_NUMERIC_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      C lo, hi;
      if constexpr (std::is_floating_point_v<C>) {
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
      } else {
        lo = std::numeric_limits<C>::lowest();
        hi = std::numeric_limits<C>::max();
      }
      if (legacy_) {
        if constexpr (std::is_floating_point_v<C>) {
          lo = static_cast<C>(attr_min_);
          hi = static_cast<C>(attr_max_);
        } else {
          lo = saturating_cast<C>(attr_min_);
          hi = saturating_cast<C>(attr_max_);
        }
      } else {
        if (ctx.has_input(1)) lo = widen(ctx.input(1).data<T>()[0]);
        if (ctx.has_input(2)) hi = widen(ctx.input(2).data<T>()[0]);
      }
      SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        C v = widen(in[i]);
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        out[i] = narrow<T>(v);
      }
      return Status::ok();
    }, "Clip");
  }

 private:
  bool legacy_ = false;
  float attr_min_ = 0.f, attr_max_ = 0.f;
};

using backend::kAnyOpset;
using backend::kernel_factory;
using backend::KernelRegistrar;

const KernelRegistrar kMax({"Max", "", 1, kAnyOpset, kernel_factory<VariadicKernel<MaxOp>>()});
const KernelRegistrar kMin({"Min", "", 1, kAnyOpset, kernel_factory<VariadicKernel<MinOp>>()});
const KernelRegistrar kSum({"Sum", "", 1, kAnyOpset, kernel_factory<VariadicKernel<SumOp>>()});
const KernelRegistrar kMean({"Mean", "", 1, kAnyOpset, kernel_factory<VariadicKernel<MeanOp>>()});
const KernelRegistrar kWhere({"Where", "", 1, kAnyOpset, kernel_factory<WhereKernel>()});
const KernelRegistrar kClip({"Clip", "", 1, kAnyOpset, kernel_factory<ClipKernel>()});

}  // namespace
}  // namespace sdx::cpu
