// Binary arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Mod, Pow, PRelu.
//
// Integer arithmetic wraps (no UB). Integer Div by zero, MIN / -1 (whose quotient does not fit)
// and integer Mod by zero fail the call with an error naming the problem (the runtime adds the node),
// never trap (HasIntegerFaults in elementwise.h: one pass, the check next to the division). Float
// division follows IEEE 754 (x / 0 is +-inf, 0 / 0 NaN). 16-bit floats compute in float; float
// Add/Sub/Mul/Div run on the vector loops (kSimd, see elementwise.h).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/cpu/kernels/util/elementwise.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using NumericTypes = Types<SDX_NUMERIC_TYPES>;

struct AddOp : NoAttrs {
  static constexpr simd::BinaryOp kSimd = simd::BinaryOp::kAdd;
  template <typename C>
  C operator()(C a, C b) const { return wrapping_add(a, b); }
};
struct SubOp : NoAttrs {
  static constexpr simd::BinaryOp kSimd = simd::BinaryOp::kSub;
  template <typename C>
  C operator()(C a, C b) const { return wrapping_sub(a, b); }
};
struct MulOp : NoAttrs {
  static constexpr simd::BinaryOp kSimd = simd::BinaryOp::kMul;
  template <typename C>
  C operator()(C a, C b) const { return wrapping_mul(a, b); }
};

// Fault bits of integer Div / Mod (HasIntegerFaults).
constexpr uint32_t kDivByZero = 1, kDivOverflow = 2;

// Integer division truncates toward zero like C. x / 0 and MIN / -1 are faults: the call fails
// (operator() returns 0 and -MIN wrapped for them, never trapping).
struct DivOp : NoAttrs {
  static constexpr simd::BinaryOp kSimd = simd::BinaryOp::kDiv;
  template <typename C>
  static uint32_t integer_faults(C a, C b) {
    uint32_t f = static_cast<uint32_t>(b == C(0)) * kDivByZero;
    if constexpr (std::is_signed_v<C>)
      f |= static_cast<uint32_t>((a == std::numeric_limits<C>::min()) & (b == C(-1))) * kDivOverflow;
    return f;
  }
  static Status fault_status(uint32_t faults, DType dt) {
    if (faults & kDivByZero) return invalid_argument(std::string("integer division by zero (") + dtype_name(dt) + ")");
    return invalid_argument(std::string("integer division overflow: MIN / -1 does not fit in ") + dtype_name(dt) +
                            " (MIN: the smallest " + dtype_name(dt) + ")");
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrapping_sub(C(0), a);
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

// fmod=1: C fmod / truncated remainder (sign of the dividend).
// fmod=0: numpy mod / Python % (sign of the divisor), for integers and floats.
// Integer x mod 0 is a fault (the call fails); MIN mod -1 is 0 (no overflow: the remainder fits).
struct ModOp {
  bool fmod = false;
  template <typename C>
  static uint32_t integer_faults(C, C b) {
    return static_cast<uint32_t>(b == C(0)) * kDivByZero;
  }
  static Status fault_status(uint32_t, DType dt) {
    return invalid_argument(std::string("integer modulo by zero (") + dtype_name(dt) + ")");
  }
  Status init(const ir::Node& node) {
    const int64_t v = node.attr_int("fmod", 0);
    if (v != 0 && v != 1) return invalid_argument("attribute 'fmod' must be 0 or 1, got " + std::to_string(v));
    fmod = v == 1;
    return Status::ok();
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
      }
      C r = static_cast<C>(a % b);
      if constexpr (std::is_signed_v<C>) {
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    } else {
      C r = std::fmod(a, b);
      if (fmod || b == C(0)) return r;
      // numpy npy_divmod: move the remainder to the divisor's sign; a zero keeps b's sign.
      if (r != C(0)) {
        if ((b < C(0)) != (r < C(0))) r += b;
      } else {
        r = std::copysign(C(0), b);
      }
      return r;
    }
  }
};

// Pow: base type T, exponent type E (may differ); the result has the base type,
// like np.power(a, b).astype(a.dtype).
template <typename T, typename E>
T pow_value(T base, E exponent) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<E>) {
    using U = wrap_uint_t<T>;
    if constexpr (std::is_signed_v<E>) {
      if (exponent < 0) {
        if (base == T(1)) return T(1);
        if constexpr (std::is_signed_v<T>) {
          if (base == T(-1)) return (exponent % 2) ? T(-1) : T(1);
        }
        return T(0);  // |base| > 1 gives a fraction that truncates to 0 (numpy raises instead)
      }
    }
    U result = 1, b = static_cast<U>(base);
    auto e = static_cast<std::make_unsigned_t<E>>(exponent);
    while (e) {
      if (e & 1u) result = static_cast<U>(result * b);
      b = static_cast<U>(b * b);
      e >>= 1;
    }
    return static_cast<T>(result);
  } else {
    // x^2 (decomposed LayerNorm, GELU's cube's parts) as one product: pow gives exactly x * x in
    // double for a base of at most 26 significant bits (every float type's), at a libm call per
    // element otherwise.
    const double x = static_cast<double>(widen(base)), e = static_cast<double>(widen(exponent));
    if (e == 2.0 && !std::is_same_v<T, double>) return saturating_cast<T>(x * x);
    return saturating_cast<T>(std::pow(x, e));
  }
}

class PowKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override { return legacy_.init(node); }
  Status run(backend::KernelContext& ctx) const override {
    const DType bt = ctx.input(0).dtype();
    const DType et = ctx.input(1).dtype();
    return dispatch<SDX_FLOAT_TYPES, int32_t, int64_t>(bt, [&](auto btag) -> Status {
      using T = typename decltype(btag)::type;
      return dispatch<SDX_NUMERIC_TYPES>(et, [&](auto etag) -> Status {
        using E = typename decltype(etag)::type;
        return run_binary_broadcast<T, E, T>(ctx, bt, [](T a, E b) { return pow_value(a, b); }, legacy_);
      }, "Pow exponent");
    }, "Pow");
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 1)) return no_bound_form();
    const DType bt = ctx.input(0).dtype();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_FLOAT_TYPES, int32_t, int64_t>(
        bt,
        [&](auto btag) -> Status {
          using T = typename decltype(btag)::type;
          return dispatch<SDX_NUMERIC_TYPES>(
              ctx.input(1).dtype(),
              [&](auto etag) -> Status {
                using E = typename decltype(etag)::type;
                bound = prepare_binary_broadcast<T, E, T>(
                    ctx, bt, [](T a, E b) { return pow_value(a, b); }, legacy_);
                return Status::ok();
              },
              "Pow exponent");
        },
        "Pow");
    return bound;
  }

 private:
  LegacyBroadcast legacy_;
};

// PRelu: y = x > 0 ? x : slope * x, slope broadcast to x's shape (unidirectional). Written as the
// ONNX reference writes it (np.where(x > 0, x, x * slope)), so NaN propagates from x and from the
// slope alike (0 * NaN slope is NaN; a NaN x takes the product, which is NaN).
template <typename T>
T prelu_value(T v, T s) {
  auto c = widen(v);
  return c > decltype(c)(0) ? v : narrow<T>(wrapping_mul(c, widen(s)));
}

class PReluKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    SDX_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1), "PRelu");
    const Tensor& x = ctx.input(0);
    const Tensor& slope = ctx.input(1);
    SDX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make({x.shape(), slope.shape()}), "PRelu");
    if (plan.output_shape() != x.shape())
      return invalid_argument("PRelu slope shape " + slope.shape().to_string() + " does not broadcast to X shape " +
                              x.shape().to_string());
    return dispatch<SDX_FLOAT_TYPES, int32_t, int64_t, uint32_t, uint64_t>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
          broadcast_map(
              plan, y.data<T>(), [](T v, T s) { return prelu_value(v, s); }, x.data<T>(), slope.data<T>());
          return Status::ok();
        },
        "PRelu");
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!has_inputs(ctx, 0, 1) || ctx.input(1).dtype() != ctx.input(0).dtype()) return no_bound_form();
    const Tensor& x = ctx.input(0);
    Result<BroadcastPlan> plan = BroadcastPlan::make({x.shape(), ctx.input(1).shape()});
    if (!plan.is_ok() || plan.value().output_shape() != x.shape() || !output_matches(ctx, 0, x.dtype(), x.shape()))
      return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_FLOAT_TYPES, int32_t, int64_t, uint32_t, uint64_t>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          bound = bind_broadcast_map(
              plan.value(), ctx.output(0).data<T>(), [](T v, T s) { return prelu_value(v, s); }, x.data<T>(),
              ctx.input(1).data<T>());
          return Status::ok();
        },
        "PRelu");
    return bound;
  }
};

using backend::kAnyOpset;
using backend::kernel_factory;
using backend::KernelRegistrar;

const KernelRegistrar kAdd({"Add", "", 1, kAnyOpset, kernel_factory<BinaryKernel<AddOp, NumericTypes>>()});
const KernelRegistrar kSub({"Sub", "", 1, kAnyOpset, kernel_factory<BinaryKernel<SubOp, NumericTypes>>()});
const KernelRegistrar kMul({"Mul", "", 1, kAnyOpset, kernel_factory<BinaryKernel<MulOp, NumericTypes>>()});
const KernelRegistrar kDiv({"Div", "", 1, kAnyOpset, kernel_factory<BinaryKernel<DivOp, NumericTypes>>()});
const KernelRegistrar kMod({"Mod", "", 1, kAnyOpset, kernel_factory<BinaryKernel<ModOp, NumericTypes>>()});
const KernelRegistrar kPow({"Pow", "", 1, kAnyOpset, kernel_factory<PowKernel>()});
const KernelRegistrar kPRelu({"PRelu", "", 1, kAnyOpset, kernel_factory<PReluKernel>()});

}  // namespace
}  // namespace sdx::cpu
