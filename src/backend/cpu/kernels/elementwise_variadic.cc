// Variadic and ternary element-wise ops with numpy broadcasting: Max, Min, Sum,
// Mean (1..N inputs), Where (condition, X, Y), Clip (bounds as attributes before
// opset 11, optional scalar inputs from 11).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels/util/elementwise.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using NumericTypes = Types<SDX_NUMERIC_TYPES>;

// Max/Min propagate NaN like numpy.maximum/minimum (the ONNX reference): the isnan tests come first,
// as a plain `a < b ? b : a` would return a number for some NaN operands.
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
    return dispatch<SDX_NUMERIC_TYPES>(
        dt,
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using C = compute_t<T>;
          SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, dt, plan.output_shape()), "");
          std::vector<const T*> in(static_cast<size_t>(n));
          for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = ctx.input(i).data<T>();
          if (const int v = scalar_operand<T>(ctx.input(0), n > 1 ? &ctx.input(1) : nullptr, y.shape()); v >= 0) {
            with_scalar<T>(in[static_cast<size_t>(1 - v)], in[static_cast<size_t>(v)][0], v == 0, y.data<T>(),
                           y.numel());
            return Status::ok();
          }
          if (same_shapes(shapes, y.shape()) && elementwise<T>(in.data(), n, y.data<T>(), y.numel()))
            return Status::ok();
          std::vector<C> acc(static_cast<size_t>(plan.run_length()));
          fold<T>(plan, in.data(), n, y.data<T>(), acc.data());
          return Status::ok();
        },
        name_);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    const int n = ctx.num_inputs();
    if (n < 1 || !has_inputs(ctx, 0, n - 1)) return no_bound_form();
    std::vector<Shape> shapes;
    for (int i = 0; i < n; ++i) {
      if (ctx.input(i).dtype() != ctx.input(0).dtype()) return no_bound_form();
      shapes.push_back(ctx.input(i).shape());
    }
    Result<BroadcastPlan> made = BroadcastPlan::make(shapes);
    const DType dt = ctx.input(0).dtype();
    if (!made.is_ok() || !output_matches(ctx, 0, dt, made.value().output_shape())) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_NUMERIC_TYPES>(
        dt,
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using C = compute_t<T>;
          std::vector<const T*> in(static_cast<size_t>(n));
          for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = ctx.input(i).data<T>();
          const Tensor& y = ctx.output(0);
          if (const int v = scalar_operand<T>(ctx.input(0), n > 1 ? &ctx.input(1) : nullptr, y.shape()); v >= 0) {
            bound = backend::bind_call([x = in[static_cast<size_t>(1 - v)], c = in[static_cast<size_t>(v)],
                                        c_first = v == 0, out = y.data<T>(), count = y.numel()] {
              with_scalar<T>(x, c[0], c_first, out, count);  // c read on every call: it may change
              return Status::ok();
            });
            return Status::ok();
          }
          if (kMinMax && std::is_same_v<T, float> && same_shapes(shapes, y.shape())) {
            bound = backend::bind_call([in = std::move(in), n, out = y.data<T>(), count = y.numel()] {
              elementwise<T>(in.data(), n, out, count);
              return Status::ok();
            });
            return Status::ok();
          }
          ScratchBuffer<C> acc(static_cast<size_t>(made.value().run_length()));
          bound = backend::bind_call(
              [plan = made.value(), in = std::move(in), n, out = ctx.output(0).data<T>(), acc = std::move(acc)] {
                fold<T>(plan, in.data(), n, out, acc.data());
                return Status::ok();
              });
          return Status::ok();
        },
        name_);
    return bound;
  }

 private:
  static constexpr bool kMinMax = std::is_same_v<Op, MaxOp> || std::is_same_v<Op, MinOp>;

  // Max / Min of float32 x and a one-element c (a floor after LeakyRelu: openWakeWord's embedding
  // model has 19): which input is c (0 or 1) when the other has the output's shape, else -1.
  template <typename T>
  static int scalar_operand(const Tensor& a, const Tensor* b, const Shape& out) {
    if constexpr (kMinMax && std::is_same_v<T, float>) {
      if (!b) return -1;
      if (b->numel() == 1 && a.shape() == out) return 1;
      if (a.numel() == 1 && b->shape() == out) return 0;
    }
    return -1;
  }

  // out[i] = op(x[i], c), or op(c, x[i]) when c_first, split over the pool: Op's select with its
  // operands in their order (so equal values, +0 and -0, give Op's pick); a NaN x passes and a NaN c
  // makes every output c, as in Op.
  template <typename T>
  static void with_scalar(const T* x, T c, bool c_first, T* out, int64_t n) {
    if constexpr (kMinMax && std::is_same_v<T, float>) {
      if (c != c) {
        std::fill(out, out + n, c);
        return;
      }
      parallel_for(n, kCheapMapGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const float v = x[i];
          const float a = c_first ? c : v, d = c_first ? v : c;  // Op(a, d)
          float r;
          if constexpr (std::is_same_v<Op, MaxOp>) r = a < d ? d : a;
          else r = d < a ? d : a;
          out[i] = v != v ? v : r;
        }
      });
    }
  }

  static bool same_shapes(const std::vector<Shape>& shapes, const Shape& out) {
    return std::all_of(shapes.begin(), shapes.end(), [&](const Shape& s) { return s == out; });
  }

  // Max / Min of float32 inputs of the output's shape (torch.stack(...).max(dim) after the optimizer,
  // attacut's three convolutions), in 4-lane vectors split over the pool: per element Op's choice with
  // its NaN rule (a NaN accumulator stays, else a NaN input wins, else the compare), so the bits of
  // fold(). False (nothing done) for other ops and types.
  template <typename T>
  static bool elementwise(const T* const* in, int n, T* out, int64_t count) {
    if constexpr (kMinMax && std::is_same_v<T, float>) {
      typedef float V __attribute__((vector_size(16)));
      auto pick = [](auto a, auto b) {
        if constexpr (std::is_same_v<Op, MaxOp>) {
          auto r = a < b ? b : a;
          r = b != b ? b : r;
          return a != a ? a : r;
        } else {
          auto r = b < a ? b : a;
          r = b != b ? b : r;
          return a != a ? a : r;
        }
      };
      parallel_for(count, kCheapMapGrain, [&](int64_t b, int64_t e) {
        int64_t i = b;
        for (; i + 4 <= e; i += 4) {
          V acc, v;
          std::memcpy(&acc, in[0] + i, sizeof(V));
          for (int k = 1; k < n; ++k) {
            std::memcpy(&v, in[k] + i, sizeof(V));
            acc = pick(acc, v);
          }
          std::memcpy(out + i, &acc, sizeof(V));
        }
        for (; i < e; ++i) {
          float acc = in[0][i];
          for (int k = 1; k < n; ++k) acc = Op()(acc, in[k][i]);
          out[i] = acc;
        }
      });
      return true;
    }
    (void)in, (void)n, (void)out, (void)count;
    return false;
  }

  // acc holds plan.run_length() elements.
  template <typename T>
  static void fold(const BroadcastPlan& plan, const T* const* in, int n, T* out, compute_t<T>* acc) {
    const Op op;
    plan.for_each_run([&](int64_t o, const int64_t* off, const int64_t* step, int64_t count) {
      const T* p0 = in[0] + off[0];
      for (int64_t k = 0; k < count; ++k) acc[k] = widen(p0[k * step[0]]);
      for (int i = 1; i < n; ++i) {
        const T* p = in[i] + off[i];
        const int64_t s = step[i];
        for (int64_t k = 0; k < count; ++k) acc[k] = op(acc[k], widen(p[k * s]));
      }
      for (int64_t k = 0; k < count; ++k) out[o + k] = narrow<T>(op.finish(acc[k], n));
    });
  }

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
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 2)) return no_bound_form();
    const Tensor& cond = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    if (cond.dtype() != DType::kBool || y.dtype() != x.dtype()) return no_bound_form();
    Result<BroadcastPlan> plan = BroadcastPlan::make({cond.shape(), x.shape(), y.shape()});
    if (!plan.is_ok() || !output_matches(ctx, 0, x.dtype(), plan.value().output_shape())) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_ALL_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          if constexpr (bindable_v<T>) {
            bound = bind_broadcast_map(
                plan.value(), ctx.output(0).data<T>(), [](bool c, T a, T b) { return c ? a : b; }, cond.data<bool>(),
                x.data<T>(), y.data<T>());
          }
          return Status::ok();
        },
        "Where");
    return bound;
  }
};

// Clip: y = min(max(x, lo), hi) (so lo > hi gives hi everywhere, like numpy.clip) with numpy's NaN
// rules: a NaN x stays NaN, a NaN bound makes every output NaN.
class ClipKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    params_.legacy = node.opset() < 11;
    if (params_.legacy) {
      params_.attr_min = node.attr_float("min", -std::numeric_limits<float>::infinity());
      params_.attr_max = node.attr_float("max", std::numeric_limits<float>::infinity());
    }
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    for (int i = 1; i <= 2 && !params_.legacy; ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& b = ctx.input(i);
      if (b.dtype() != x.dtype())
        return invalid_argument(std::string("Clip ") + (i == 1 ? "min" : "max") + " has element type " +
                                dtype_name(b.dtype()) + " but input has " + dtype_name(x.dtype()));
      if (b.numel() != 1)
        return invalid_argument(std::string("Clip ") + (i == 1 ? "min" : "max") + " must be a scalar, got shape " +
                                b.shape().to_string());
    }
    return dispatch<SDX_NUMERIC_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
          const T* lo = !params_.legacy && ctx.has_input(1) ? ctx.input(1).data<T>() : nullptr;
          const T* hi = !params_.legacy && ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
          clip<T>(params_, x.data<T>(), y.data<T>(), x.numel(), lo, hi);
          return Status::ok();
        },
        "Clip");
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const BoundInputs bi = bound_inputs(ctx);
    if (!bi.ok || !output_matches(ctx, 0, x.dtype(), x.shape())) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_NUMERIC_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* lo = bi.has_min ? ctx.input(1).data<T>() : nullptr;
          const T* hi = bi.has_max ? ctx.input(2).data<T>() : nullptr;
          bound =
              backend::bind_call([p = params_, in = x.data<T>(), out = ctx.output(0).data<T>(), n = x.numel(), lo, hi] {
                clip<T>(p, in, out, n, lo, hi);
                return Status::ok();
              });
          return Status::ok();
        },
        "Clip");
    return bound;
  }

 private:
  struct Params {
    bool legacy = false;  // before opset 11: bounds are the attributes
    float attr_min = 0.f, attr_max = 0.f;
  };
  struct BoundInputs {
    bool ok = true, has_min = false, has_max = false;
  };
  // Which bound inputs a bound call reads (from opset 11; each must be one element of x's type).
  BoundInputs bound_inputs(const backend::PrepareContext& ctx) const {
    BoundInputs r;
    if (params_.legacy) return r;
    for (int i = 1; i <= 2 && i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& b = ctx.input(i);
      if (b.dtype() != ctx.input(0).dtype() || b.numel() != 1) r.ok = false;
      (i == 1 ? r.has_min : r.has_max) = true;
    }
    return r;
  }

  // lo_in / hi_in: the one-element min / max inputs, or null (attributes before opset 11, else no bound).
  template <typename T>
  static void clip(const Params& p, const T* in, T* out, int64_t n, const T* lo_in, const T* hi_in) {
    using C = compute_t<T>;
    C lo, hi;
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    } else {
      lo = std::numeric_limits<C>::lowest();
      hi = std::numeric_limits<C>::max();
    }
    if (p.legacy) {
      if constexpr (std::is_floating_point_v<C>) {
        lo = static_cast<C>(p.attr_min);
        hi = static_cast<C>(p.attr_max);
      } else {
        lo = saturating_cast<C>(p.attr_min);
        hi = saturating_cast<C>(p.attr_max);
      }
    } else {
      if (lo_in) lo = widen(lo_in[0]);
      if (hi_in) hi = widen(hi_in[0]);
    }
    if constexpr (std::is_floating_point_v<C>) {
      if (lo != lo || hi != hi) {  // once per call
        const T nan = narrow<T>(lo + hi);
        for (int64_t i = 0; i < n; ++i) out[i] = nan;
        return;
      }
    }
    // `v < lo ? lo : v` is false for a NaN v, which passes (max(lo, v) on x86, never max(v, lo)).
    // Large tensors split over the pool (elementwise.h's grain); every element the same either way.
    parallel_for(n, kCheapMapGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        C v = widen(in[i]);
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        out[i] = narrow<T>(v);
      }
    });
  }

  Params params_;
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
