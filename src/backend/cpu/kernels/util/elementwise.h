// Shared building blocks for the element-wise kernel family
// (src/backend/cpu/kernels/elementwise_*.cc).
//
// An element-wise op is written once as a functor over its compute type and
// instantiated as a kernel for a list of element types:
//
//   struct ReluOp : NoAttrs {  // NaN passes (`x > 0 ? x : 0` would make it 0; see activation.h)
//     template <typename C> C operator()(C x) const { return x <= C(0) ? C(0) : x; }
//   };
//   const backend::KernelRegistrar kRelu({"Relu", "", 1, backend::kAnyOpset,
//       backend::kernel_factory<UnaryKernel<ReluOp, Types<SDX_FLOAT_TYPES, int32_t>>>()});
//
// 16-bit floats are widened to float for the functor (compute_t) and narrowed on
// store. Functors with attributes override init(node) (parsed once at load).
//
// Every template here also has a bound form (prepare()): shapes, the broadcast plan and
// the element type are settled once, and replay runs the same functor over the frozen
// buffers, with flat loops when no input needs broadcasting (or one is a single element).
// Functors must be copyable and pure per element, so every loop gives the same bits.
//
// Large tensors are split over the session's pool (cpu::parallel_for); each element is still
// computed by the same code, so the bits do not depend on the thread count. Float functors
// with a row form (float_row.h: Gelu, Tanh, Exp, ...) run on the vector kernels, those with a lane
// form (Relu, LeakyRelu, ...) on 16-byte vectors, and float
// Add/Sub/Mul/Div (a functor with `static constexpr simd::BinaryOp kSimd`) on vector loops.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/tensor/broadcast.h"
#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/float_row.h"
#include "backend/cpu/simd/vector_ops.h"
#include "core/tensor_values.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel.h"

namespace sdx::cpu {

// A list of element types, usable as a single template argument.
template <typename... Ts>
struct Types {};

template <typename... Ts, typename F>
Status dispatch_types(Types<Ts...>, DType dtype, F&& fn, const std::string& op) {
  return dispatch<Ts...>(dtype, std::forward<F>(fn), op);
}

// Storage type -> compute type and back (identity except for 16-bit floats).
template <typename T>
inline compute_t<T> widen(T v) {
  return load_as<compute_t<T>>(v);
}
template <typename T>
inline T narrow(compute_t<T> v) {
  return store_as<T>(v);
}

// Integer arithmetic that wraps on overflow (as numpy and onnxruntime do) without
// signed-overflow UB. Small types are widened to 32 bits to dodge int promotion.
template <typename T>
using wrap_uint_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
inline T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = wrap_uint_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
inline T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = wrap_uint_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename T>
inline T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = wrap_uint_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// Float -> integer conversion that never invokes UB: NaN gives 0, out-of-range
// values saturate.
template <typename T>
inline T saturating_cast(double v) {
  if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
    return narrow<T>(static_cast<compute_t<T>>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else {
    if (v != v) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// Base for functors without attributes.
struct NoAttrs {
  Status init(const ir::Node&) { return Status::ok(); }
};

// Shape/type checks shared by kernels whose inputs must all have one dtype.
inline Status check_same_dtype(const backend::KernelContext& ctx, int first, int last) {
  for (int i = first + 1; i <= last; ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.input(i).dtype() != ctx.input(first).dtype())
      return invalid_argument("input " + std::to_string(i) + " has element type " + dtype_name(ctx.input(i).dtype()) +
                              " but input " + std::to_string(first) + " has " + dtype_name(ctx.input(first).dtype()));
  }
  return Status::ok();
}

// Binary ops before opset 7 broadcast only with attribute broadcast=1, and then
// align B with A starting at attribute `axis` (default: trailing, as numpy does).
// Parsed once in init(); shape_of_b() gives the numpy-equivalent shape of B.
class LegacyBroadcast {
 public:
  Status init(const ir::Node& node) {
    if (node.opset() >= 7 || node.attr_int("broadcast", 0) == 0 || !node.attr("axis")) return Status::ok();
    axis_ = node.attr_int("axis", 0);
    active_ = true;
    return Status::ok();
  }
  Result<Shape> shape_of_b(const Shape& a, const Shape& b) const {
    if (!active_) return b;
    int64_t axis = axis_ < 0 ? axis_ + a.rank() : axis_;
    if (axis < 0 || axis + b.rank() > a.rank())
      return invalid_argument("legacy broadcast: axis " + std::to_string(axis_) + " cannot place B " + b.to_string() +
                              " inside A " + a.to_string());
    std::vector<int64_t> dims = b.dims();
    dims.resize(static_cast<size_t>(a.rank() - axis), 1);
    return Shape(dims);
  }

 private:
  bool active_ = false;
  int64_t axis_ = 0;
};

// Broadcasts inputs 0 and 1, allocates output 0 with out_dtype and stores
// f(a[..], b[..]) (raw storage types A, B -> Out).
template <typename A, typename B, typename Out, typename F>
Status run_binary_broadcast(backend::KernelContext& ctx, DType out_dtype, F&& f,
                            const LegacyBroadcast& legacy = LegacyBroadcast()) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  SDX_ASSIGN_OR_RETURN(Shape b_shape, legacy.shape_of_b(a.shape(), b.shape()), "inputs");
  SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make({a.shape(), b_shape}), "inputs");
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, out_dtype, plan.output_shape()), "");
  broadcast_map(plan, y.data<Out>(), f, a.data<A>(), b.data<B>());
  return Status::ok();
}

// ---- Bound forms -------------------------------------------------------------

namespace detail {
// How a bound loop holds a single-element operand: by value (so the compiler can keep it in
// a register), by reference for strings (no copy).
template <typename T>
using operand_hold_t = std::conditional_t<std::is_trivially_copyable_v<T>, const T, const T&>;
}  // namespace detail

// Elements per parallel chunk: about 10-20 us of work, so the pool's hand-off (a few us) pays.
// Cheap maps (Relu, Add, a cast) run near memory speed; transcendental rows cost ~1 ns/element.
inline constexpr int64_t kCheapMapGrain = int64_t{1} << 15;
inline constexpr int64_t kRowMapGrain = int64_t{1} << 13;

// The bound form of broadcast_map(plan, out, op, in...) over fixed buffers, split over the pool
// (chunks of about kCheapMapGrain elements). When every input reads linearly (its element count
// is the output's) each chunk is one flat loop; with two inputs, one of them may also be a single
// element. Other layouts walk the plan's runs (copied into the call). op is applied to the same
// elements as broadcast_map applies it to, so the results are bitwise the same.
template <typename Out, typename Op, typename... In>
std::unique_ptr<backend::BoundKernel> bind_broadcast_map(const BroadcastPlan& plan, Out* out, Op op, const In*... in) {
  const int64_t n = plan.numel();
  if (n == 0) return backend::bind_call([] { return Status::ok(); });
  bool all_linear = true;
  for (int i = 0; i < plan.num_inputs(); ++i) all_linear = all_linear && plan.input_numel(i) == n;
  if (all_linear) {
    return backend::bind_call([=] {
      parallel_for(n, kCheapMapGrain, [&](int64_t s, int64_t e) {
        for (int64_t k = s; k < e; ++k) out[k] = op(in[k]...);
      });
      return Status::ok();
    });
  }
  if constexpr (sizeof...(In) == 2) {
    const auto ptrs = std::make_tuple(in...);
    const auto* a = std::get<0>(ptrs);
    const auto* b = std::get<1>(ptrs);
    if (plan.input_numel(0) == n && plan.input_numel(1) == 1) {
      return backend::bind_call([=] {
        parallel_for(n, kCheapMapGrain, [&](int64_t s, int64_t e) {
          detail::operand_hold_t<std::remove_cv_t<std::remove_pointer_t<decltype(b)>>> bv = b[0];
          for (int64_t k = s; k < e; ++k) out[k] = op(a[k], bv);
        });
        return Status::ok();
      });
    }
    if (plan.input_numel(0) == 1 && plan.input_numel(1) == n) {
      return backend::bind_call([=] {
        parallel_for(n, kCheapMapGrain, [&](int64_t s, int64_t e) {
          detail::operand_hold_t<std::remove_cv_t<std::remove_pointer_t<decltype(a)>>> av = a[0];
          for (int64_t k = s; k < e; ++k) out[k] = op(av, b[k]);
        });
        return Status::ok();
      });
    }
  }
  const int64_t runs = plan.num_runs(), run_grain = std::max<int64_t>(1, kCheapMapGrain / plan.run_length());
  return backend::bind_call([=] {
    parallel_for(runs, run_grain, [&](int64_t r0, int64_t r1) { broadcast_map_runs(plan, r0, r1, out, op, in...); });
    return Status::ok();
  });
}

// True when inputs first..last are all present.
inline bool has_inputs(const backend::PrepareContext& ctx, int first, int last) {
  if (ctx.num_inputs() <= last) return false;
  for (int i = first; i <= last; ++i)
    if (!ctx.has_input(i)) return false;
  return true;
}

// prepare() counterpart of run_binary_broadcast: null when the shapes do not broadcast or
// output 0 is not exactly (out_dtype, broadcast shape).
template <typename A, typename B, typename Out, typename F>
std::unique_ptr<backend::BoundKernel> prepare_binary_broadcast(const backend::PrepareContext& ctx, DType out_dtype, F f,
                                                               const LegacyBroadcast& legacy = LegacyBroadcast()) {
  if (!has_inputs(ctx, 0, 1)) return no_bound_form();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Result<Shape> b_shape = legacy.shape_of_b(a.shape(), b.shape());
  if (!b_shape.is_ok()) return no_bound_form();
  Result<BroadcastPlan> plan = BroadcastPlan::make({a.shape(), b_shape.value()});
  if (!plan.is_ok() || !output_matches(ctx, 0, out_dtype, plan.value().output_shape())) return no_bound_form();
  return bind_broadcast_map(plan.value(), ctx.output(0).data<Out>(), std::move(f), a.data<A>(), b.data<B>());
}


// out[i] = op(in[i]) for i < n, split over the pool. Float rows (and 16-bit floats, widened in
// blocks) go through op.row when the functor has one (Relu's too); float and double through op.lanes
// (branch-free; float at the CPU's vector width, wide_lane_row, double on 16-byte vectors) when it has
// that (LeakyRelu, HardSigmoid, HardSwish: float_row.h).
template <typename T, typename Op>
void unary_map(const Op& op, const T* in, T* out, int64_t n) {
  if constexpr (HasFloatRow<Op> && std::is_same_v<T, float>) {
    // Exact row kernels (Relu) cost what a cheap map costs.
    constexpr int64_t kGrain = HasLanes<Op> ? kCheapMapGrain : kRowMapGrain;
    parallel_for(n, kGrain, [&](int64_t b, int64_t e) { op.row(in + b, out + b, e - b); });
  } else if constexpr (HasLanes<Op> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    parallel_for(n, kCheapMapGrain, [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, float> && HasWideLanes<Op>) {
        if (wide_lane_row(op, in + b, out + b, e - b, nullptr, 0)) return;
      }
      lane_map(op, in + b, out + b, e - b);
    });
  } else if constexpr (HasFloatRow<Op> && is_half_v<T>) {
    parallel_for(n, kRowMapGrain, [&](int64_t b, int64_t e) {
      constexpr int64_t kBlock = 256;
      float buf[kBlock];
      for (int64_t i = b; i < e; i += kBlock) {
        const int64_t m = std::min(kBlock, e - i);
        for (int64_t k = 0; k < m; ++k) buf[k] = widen(in[i + k]);
        op.row(buf, buf, m);
        for (int64_t k = 0; k < m; ++k) out[i + k] = narrow<T>(buf[k]);
      }
    });
  } else {
    parallel_for(n, kCheapMapGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = narrow<T>(op(widen(in[i])));
    });
  }
}

// Binary functors whose float form is one exact IEEE operation declare it as
// `static constexpr simd::BinaryOp kSimd`.
template <typename Op>
concept HasSimdBinary = requires { Op::kSimd; };

// out = a op b over float buffers broadcast by plan, on the vector loops and split over the
// pool: flat when both inputs read linearly or one is a single element, else run by run of
// the plan (row broadcast: [M, N] op [N] is M runs of N).
inline void simd_broadcast_binary(simd::BinaryOp op, const BroadcastPlan& plan, const float* a, const float* b,
                                  float* out) {
  const int64_t n = plan.numel();
  if (n == 0) return;
  const int64_t na = plan.input_numel(0), nb = plan.input_numel(1);
  if (na == n && nb == n) {
    parallel_for(n, kCheapMapGrain, [&](int64_t s, int64_t e) { simd::binary_vv(op, a + s, b + s, out + s, e - s); });
    return;
  }
  if (na == n && nb == 1) {
    const float bv = b[0];
    parallel_for(n, kCheapMapGrain, [&](int64_t s, int64_t e) { simd::binary_vs(op, a + s, bv, out + s, e - s); });
    return;
  }
  if (na == 1 && nb == n) {
    const float av = a[0];
    parallel_for(n, kCheapMapGrain, [&](int64_t s, int64_t e) { simd::binary_sv(op, av, b + s, out + s, e - s); });
    return;
  }
  const int64_t len = plan.run_length();
  const int64_t grain = std::max<int64_t>(1, kCheapMapGrain / len);
  parallel_for(plan.num_runs(), grain, [&](int64_t first, int64_t last) {
    plan.for_each_run(first, last, [&](int64_t o, const int64_t* off, const int64_t* step, int64_t count) {
      const float* pa = a + off[0];
      const float* pb = b + off[1];
      float* y = out + o;
      if (count < 8 || (step[0] == 0 && step[1] == 0)) {  // short runs: a call would cost more than the work
        for (int64_t k = 0; k < count; ++k) {
          const float u = pa[k * step[0]], v = pb[k * step[1]];
          y[k] = op == simd::BinaryOp::kAdd ? u + v : op == simd::BinaryOp::kSub ? u - v : op == simd::BinaryOp::kMul ? u * v : u / v;
        }
      } else if (step[0] == 1 && step[1] == 1) {
        simd::binary_vv(op, pa, pb, y, count);
      } else if (step[0] == 1) {
        simd::binary_vs(op, pa, pb[0], y, count);
      } else {
        simd::binary_sv(op, pa[0], pb, y, count);
      }
    });
  });
}

// Binary functors whose integer form is undefined for some operand pairs (x / 0, INT_MIN / -1)
// declare `static uint32_t integer_faults(C a, C b)` for integer C, a bit per kind of fault (0 for a
// valid pair, computed without branches), and `static Status fault_status(uint32_t faults, DType)`.
// operator() must still return some value for a faulting pair without trapping (no SIGFPE). The
// kernel ORs the faults of every element into a register in the same pass that computes them and
// fails the call, run() and bound call alike, when any bit is set: the check costs an OR per element
// next to an integer division, and the loop's branches stay predictable.
template <typename Op>
concept HasIntegerFaults = requires(int32_t a, uint32_t bits, DType dt) {
  { Op::integer_faults(a, a) } -> std::convertible_to<uint32_t>;
  { Op::fault_status(bits, dt) } -> std::same_as<Status>;
};

// out = op(a, b) over integer buffers broadcast by plan, with Op's fault check (HasIntegerFaults).
template <typename Op, typename T>
Status checked_broadcast_binary(const Op& op, const BroadcastPlan& plan, const T* a, const T* b, T* out, DType dt) {
  uint32_t faults = 0;
  plan.for_each_run([&](int64_t o, const int64_t* off, const int64_t* step, int64_t count) {
    const T* pa = a + off[0];
    const T* pb = b + off[1];
    T* y = out + o;
    const int64_t sa = step[0], sb = step[1];
    uint32_t f = 0;  // a local the stores to y cannot alias, so it stays in a register
    for (int64_t k = 0; k < count; ++k) {
      const T u = pa[k * sa], v = pb[k * sb];
      f |= Op::integer_faults(u, v);
      y[k] = op(u, v);
    }
    faults |= f;
  });
  return faults ? Op::fault_status(faults, dt) : Status::ok();
}

// Element types a bound call can store with plain assignments (strings allocate).
template <typename T>
inline constexpr bool bindable_v = std::is_trivially_copyable_v<T>;

// Same-type binary op: Op::operator()(C, C) -> C on compute types, output dtype = input dtype.
template <typename Op, typename TypeList>
class BinaryKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    name_ = node.op_type();
    SDX_RETURN_IF_ERROR(legacy_.init(node), "");
    return op_.init(node);
  }
  Status run(backend::KernelContext& ctx) const override {
    SDX_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1), name_);
    const DType dt = ctx.input(0).dtype();
    return dispatch_types(TypeList{}, dt, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (HasSimdBinary<Op> && std::is_same_v<T, float>) {
        const Tensor& a = ctx.input(0);
        const Tensor& b = ctx.input(1);
        SDX_ASSIGN_OR_RETURN(Shape b_shape, legacy_.shape_of_b(a.shape(), b.shape()), "inputs");
        SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make({a.shape(), b_shape}), "inputs");
        SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, dt, plan.output_shape()), "");
        simd_broadcast_binary(Op::kSimd, plan, a.data<float>(), b.data<float>(), y.data<float>());
        return Status::ok();
      }
      if constexpr (HasIntegerFaults<Op> && std::is_integral_v<T>) {
        const Tensor& a = ctx.input(0);
        const Tensor& b = ctx.input(1);
        SDX_ASSIGN_OR_RETURN(Shape b_shape, legacy_.shape_of_b(a.shape(), b.shape()), "inputs");
        SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make({a.shape(), b_shape}), "inputs");
        SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, dt, plan.output_shape()), "");
        return checked_broadcast_binary(op_, plan, a.data<T>(), b.data<T>(), y.data<T>(), dt);
      }
      const Op& op = op_;
      return run_binary_broadcast<T, T, T>(ctx, dt, [&op](T x, T y) { return narrow<T>(op(widen(x), widen(y))); }, legacy_);
    }, name_);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 1) || ctx.input(1).dtype() != ctx.input(0).dtype()) return no_bound_form();
    const DType dt = ctx.input(0).dtype();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch_types(
        TypeList{}, dt,
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          if constexpr (HasSimdBinary<Op> && std::is_same_v<T, float>) {
            const Tensor& a = ctx.input(0);
            const Tensor& b = ctx.input(1);
            Result<Shape> b_shape = legacy_.shape_of_b(a.shape(), b.shape());
            if (!b_shape.is_ok()) return Status::ok();
            Result<BroadcastPlan> plan = BroadcastPlan::make({a.shape(), b_shape.value()});
            if (!plan.is_ok() || !output_matches(ctx, 0, dt, plan.value().output_shape())) return Status::ok();
            bound = backend::bind_call([plan = plan.value(), pa = a.data<float>(), pb = b.data<float>(),
                                        py = ctx.output(0).template data<float>()] {
              simd_broadcast_binary(Op::kSimd, plan, pa, pb, py);
              return Status::ok();
            });
          } else if constexpr (HasIntegerFaults<Op> && std::is_integral_v<T>) {
            const Tensor& a = ctx.input(0);
            const Tensor& b = ctx.input(1);
            Result<Shape> b_shape = legacy_.shape_of_b(a.shape(), b.shape());
            if (!b_shape.is_ok()) return Status::ok();
            Result<BroadcastPlan> plan = BroadcastPlan::make({a.shape(), b_shape.value()});
            if (!plan.is_ok() || !output_matches(ctx, 0, dt, plan.value().output_shape())) return Status::ok();
            bound = backend::bind_call([op = op_, plan = plan.value(), pa = a.data<T>(), pb = b.data<T>(),
                                        py = ctx.output(0).template data<T>(), dt] {
              return checked_broadcast_binary(op, plan, pa, pb, py, dt);
            });
          } else if constexpr (bindable_v<T>) {
            const Op op = op_;
            bound = prepare_binary_broadcast<T, T, T>(
                ctx, dt, [op](T x, T y) { return narrow<T>(op(widen(x), widen(y))); }, legacy_);
          }
          return Status::ok();
        },
        name_);
    return bound;
  }

 private:
  Op op_;
  LegacyBroadcast legacy_;
  std::string name_;
};

// Same-type binary predicate: Op::operator()(C, C) -> bool, output bool.
template <typename Op, typename TypeList>
class CompareKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    name_ = node.op_type();
    SDX_RETURN_IF_ERROR(legacy_.init(node), "");
    return op_.init(node);
  }
  Status run(backend::KernelContext& ctx) const override {
    SDX_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1), name_);
    return dispatch_types(TypeList{}, ctx.input(0).dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const Op& op = op_;
      if constexpr (std::is_same_v<T, std::string>) {
        return run_binary_broadcast<T, T, bool>(ctx, DType::kBool, [&op](const T& x, const T& y) { return op(x, y); }, legacy_);
      } else {
        return run_binary_broadcast<T, T, bool>(ctx, DType::kBool, [&op](T x, T y) { return op(widen(x), widen(y)); }, legacy_);
      }
    }, name_);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 1) || ctx.input(1).dtype() != ctx.input(0).dtype()) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch_types(
        TypeList{}, ctx.input(0).dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const Op op = op_;
          if constexpr (std::is_same_v<T, std::string>) {  // comparing strings reads them, never copies
            bound = prepare_binary_broadcast<T, T, bool>(
                ctx, DType::kBool, [op](const T& x, const T& y) { return op(x, y); }, legacy_);
          } else {
            bound = prepare_binary_broadcast<T, T, bool>(
                ctx, DType::kBool, [op](T x, T y) { return op(widen(x), widen(y)); }, legacy_);
          }
          return Status::ok();
        },
        name_);
    return bound;
  }

 private:
  Op op_;
  LegacyBroadcast legacy_;
  std::string name_;
};

// Unary op: Op::operator()(C) -> C on compute types, output dtype = input dtype.
template <typename Op, typename TypeList>
class UnaryKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    name_ = node.op_type();
    return op_.init(node);
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    return dispatch_types(TypeList{}, x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
      unary_map(op_, x.data<T>(), y.data<T>(), x.numel());
      return Status::ok();
    }, name_);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    if (!output_matches(ctx, 0, x.dtype(), x.shape())) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch_types(
        TypeList{}, x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* in = x.data<T>();
          T* out = ctx.output(0).template data<T>();
          const int64_t n = x.numel();
          const Op op = op_;
          bound = backend::bind_call([=] {
            unary_map(op, in, out, n);
            return Status::ok();
          });
          return Status::ok();
        },
        name_);
    return bound;
  }

 private:
  Op op_;
  std::string name_;
};

// Unary predicate: Op::operator()(C) -> bool, output bool.
template <typename Op, typename TypeList>
class UnaryPredicateKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    name_ = node.op_type();
    return op_.init(node);
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    return dispatch_types(TypeList{}, x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kBool, x.shape()), "");
      const T* in = x.data<T>();
      bool* out = y.data<bool>();
      const int64_t n = x.numel();
      for (int64_t i = 0; i < n; ++i) out[i] = op_(widen(in[i]));
      return Status::ok();
    }, name_);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    if (!output_matches(ctx, 0, DType::kBool, x.shape())) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch_types(
        TypeList{}, x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* in = x.data<T>();
          bool* out = ctx.output(0).template data<bool>();
          const int64_t n = x.numel();
          const Op op = op_;
          bound = backend::bind_call([=] {
            for (int64_t i = 0; i < n; ++i) out[i] = op(widen(in[i]));
            return Status::ok();
          });
          return Status::ok();
        },
        name_);
    return bound;
  }

 private:
  Op op_;
  std::string name_;
};

}  // namespace sdx::cpu
