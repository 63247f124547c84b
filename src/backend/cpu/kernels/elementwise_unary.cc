// Unary math: Abs, Neg, Exp, Log, Sqrt, Reciprocal, Floor, Ceil, Round, Sign,
// Erf, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, and the
// predicates IsNaN, IsInf.
#include <cmath>
#include <type_traits>

#include "backend/cpu/kernels/util/elementwise.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using FloatTypes = Types<SDX_FLOAT_TYPES>;
using NumericTypes = Types<SDX_NUMERIC_TYPES>;
using SignedTypes = Types<SDX_FLOAT_TYPES, int8_t, int16_t, int32_t, int64_t>;

struct AbsOp : NoAttrs {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? wrapping_sub(C(0), x) : x;
    else return std::fabs(x);
  }
};
struct NegOp : NoAttrs {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return wrapping_sub(C(0), x);
    else return -x;
  }
};
struct SignOp : NoAttrs {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return x > C(0) ? C(1) : (x < C(0) ? static_cast<C>(-1) : C(0));
  }
};

// Float-only functions: C is float (also for 16-bit floats) or double.
#define SDX_FLOAT_UNARY_OP(Name, expr)       \
  struct Name : NoAttrs {                    \
    template <typename C>                    \
    C operator()(C x) const { return expr; } \
  };
// Exp and Erf compute float on the vector kernels (about 1 ulp; float_row.h).
#define SDX_FLOAT_ROW_OP(Name, expr, simd_fn)                                      \
  struct Name : NoAttrs {                                                         \
    void row(const float* x, float* y, int64_t n) const { simd_fn(x, y, n); }     \
    template <typename C>                                                         \
    C operator()(C x) const {                                                     \
      if constexpr (std::is_same_v<C, float>) return apply_row1(*this, x);        \
      else return expr;                                                           \
    }                                                                             \
  };
SDX_FLOAT_ROW_OP(ExpOp, std::exp(x), simd::exp)
SDX_FLOAT_ROW_OP(ErfOp, std::erf(x), simd::erf)
#undef SDX_FLOAT_ROW_OP
SDX_FLOAT_UNARY_OP(LogOp, std::log(x))
SDX_FLOAT_UNARY_OP(SqrtOp, std::sqrt(x))
SDX_FLOAT_UNARY_OP(ReciprocalOp, C(1) / x)
SDX_FLOAT_UNARY_OP(FloorOp, std::floor(x))
SDX_FLOAT_UNARY_OP(CeilOp, std::ceil(x))
SDX_FLOAT_UNARY_OP(RoundOp, std::nearbyint(x))  // default rounding mode: half to even
SDX_FLOAT_UNARY_OP(SinOp, std::sin(x))
SDX_FLOAT_UNARY_OP(CosOp, std::cos(x))
SDX_FLOAT_UNARY_OP(TanOp, std::tan(x))
SDX_FLOAT_UNARY_OP(AsinOp, std::asin(x))
SDX_FLOAT_UNARY_OP(AcosOp, std::acos(x))
SDX_FLOAT_UNARY_OP(AtanOp, std::atan(x))
SDX_FLOAT_UNARY_OP(SinhOp, std::sinh(x))
SDX_FLOAT_UNARY_OP(CoshOp, std::cosh(x))
SDX_FLOAT_UNARY_OP(AsinhOp, std::asinh(x))
SDX_FLOAT_UNARY_OP(AcoshOp, std::acosh(x))
SDX_FLOAT_UNARY_OP(AtanhOp, std::atanh(x))
#undef SDX_FLOAT_UNARY_OP

struct IsNaNOp : NoAttrs {
  template <typename C>
  bool operator()(C x) const { return std::isnan(x); }
};
struct IsInfOp {
  bool negative = true, positive = true;
  Status init(const ir::Node& node) {
    negative = node.attr_int("detect_negative", 1) != 0;
    positive = node.attr_int("detect_positive", 1) != 0;
    return Status::ok();
  }
  template <typename C>
  bool operator()(C x) const { return std::isinf(x) && (x > 0 ? positive : negative); }
};

using backend::kAnyOpset;
using backend::kernel_factory;
using backend::KernelDef;
using backend::KernelRegistrar;

template <typename Op>
KernelDef float_unary(const char* name) {
  return {name, "", 1, kAnyOpset, kernel_factory<UnaryKernel<Op, FloatTypes>>()};
}

const KernelRegistrar kAbs({"Abs", "", 1, kAnyOpset, kernel_factory<UnaryKernel<AbsOp, NumericTypes>>()});
const KernelRegistrar kNeg({"Neg", "", 1, kAnyOpset, kernel_factory<UnaryKernel<NegOp, SignedTypes>>()});
const KernelRegistrar kSign({"Sign", "", 1, kAnyOpset, kernel_factory<UnaryKernel<SignOp, NumericTypes>>()});
const KernelRegistrar kExp(float_unary<ExpOp>("Exp"));
const KernelRegistrar kLog(float_unary<LogOp>("Log"));
const KernelRegistrar kSqrt(float_unary<SqrtOp>("Sqrt"));
const KernelRegistrar kReciprocal(float_unary<ReciprocalOp>("Reciprocal"));
const KernelRegistrar kFloor(float_unary<FloorOp>("Floor"));
const KernelRegistrar kCeil(float_unary<CeilOp>("Ceil"));
const KernelRegistrar kRound(float_unary<RoundOp>("Round"));
const KernelRegistrar kErf(float_unary<ErfOp>("Erf"));
const KernelRegistrar kSin(float_unary<SinOp>("Sin"));
const KernelRegistrar kCos(float_unary<CosOp>("Cos"));
const KernelRegistrar kTan(float_unary<TanOp>("Tan"));
const KernelRegistrar kAsin(float_unary<AsinOp>("Asin"));
const KernelRegistrar kAcos(float_unary<AcosOp>("Acos"));
const KernelRegistrar kAtan(float_unary<AtanOp>("Atan"));
const KernelRegistrar kSinh(float_unary<SinhOp>("Sinh"));
const KernelRegistrar kCosh(float_unary<CoshOp>("Cosh"));
const KernelRegistrar kAsinh(float_unary<AsinhOp>("Asinh"));
const KernelRegistrar kAcosh(float_unary<AcoshOp>("Acosh"));
const KernelRegistrar kAtanh(float_unary<AtanhOp>("Atanh"));
const KernelRegistrar kIsNaN({"IsNaN", "", 1, kAnyOpset,
                              kernel_factory<UnaryPredicateKernel<IsNaNOp, FloatTypes>>()});
const KernelRegistrar kIsInf({"IsInf", "", 1, kAnyOpset,
                              kernel_factory<UnaryPredicateKernel<IsInfOp, FloatTypes>>()});

}  // namespace
}  // namespace sdx::cpu
