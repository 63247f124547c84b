// StrengthReductionOptimizations (pass 8): replaces an expensive op by a cheaper equivalent.
//
//   Pow(x, 2)   -> Mul(x, x)
//   Pow(x, 0.5) -> Sqrt(x)
//   Pow(x, -1)  -> Reciprocal(x)
//   Div(x, c)   -> Mul(x, 1/c)     c a float32/float64 constant, 1/c computed once by the Reciprocal kernel
//
// For float x only (float16, bfloat16, float, double; Div: float and double), with the exponent a
// constant equal everywhere to 2, 0.5 or -1 that broadcasts into x without changing its shape.
//
// Tolerance:
//  - x * x is bitwise pow(x, 2) (the Pow kernel computes in double; x^2 of a float is exact there,
//    so both round the exact square once).
//  - sqrt(x), 1/x agree with pow(x, 0.5), pow(x, -1) to 1 ulp, except pow(-0, 0.5) = +0 (Sqrt: -0)
//    and pow(-inf, 0.5) = +inf (Sqrt: NaN).
//  - x * (1/c) differs from x / c by at most 1.5 ulp (two roundings instead of one; relative error
//    <= 2^-23 * 1.5 for float32), exactly equal when c is a power of two. Only done when every
//    element of c is finite and non-zero and 1/c is finite and normal in c's type (so x * (1/c)
//    overflows and underflows where x / c does, up to the last ulp). float16/bfloat16 are left
//    alone: rounding 1/c to 11 or 8 bits would cost up to 1e-3 relative error.
// Pow(x, 3) -> x * x * x is not done: it rounds twice, and GELU fusion matches Pow(x, 3).
#include <cmath>

#include "core/tensor_values.h"
#include "opt/algebra_util.h"
#include "opt/constant_eval.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Pow(x, c): float x, c uniformly `exponent` and broadcasting into x without changing its shape.
bool pow_of(const ir::Node& n, double exponent) {
  if (!uses_numpy_broadcast(n) || n.num_inputs() != 2 || !n.input(0) || constant_value(n.input(0))) return false;
  const Tensor* c = constant_value(n.input(1));
  auto u = uniform_constant(n.input(1));
  const DType t = elem_type(n.input(0));
  return c && u && *u == exponent && is_float(t) && t == elem_type(n.output(0)) &&
         broadcasts_into(c->shape().dims(), n.input(0));
}

// 1/c when c is float32/float64 with every element finite and non-zero and every reciprocal finite
// and normal.
std::optional<Tensor> safe_reciprocal(const Tensor& c) {
  if ((c.dtype() != DType::kFloat32 && c.dtype() != DType::kFloat64) || c.numel() == 0) return std::nullopt;
  auto r = evaluate_op("Reciprocal", {c});
  if (!r.is_ok()) return std::nullopt;
  auto vals = read_doubles(*r, "reciprocal");
  if (!vals.is_ok()) return std::nullopt;
  const double min_normal = c.dtype() == DType::kFloat32 ? 1.17549435e-38 : 2.2250738585072014e-308;
  for (double v : *vals)
    if (!std::isfinite(v) || std::fabs(v) < min_normal) return std::nullopt;
  return std::move(r).value();
}

class StrengthReductionOptimizations final : public PatternPass {
 public:
  StrengthReductionOptimizations() {
    struct PowRule {
      double exponent;
      const char* op;
      const char* what;
    };
    for (const PowRule& r :
         {PowRule{2.0, "Mul", "Pow(x, 2) -> Mul(x, x)"}, PowRule{0.5, "Sqrt", "Pow(x, 0.5) -> Sqrt(x)"},
          PowRule{-1.0, "Reciprocal", "Pow(x, -1) -> Reciprocal(x)"}}) {
      add_rule(
          {r.what, {"Pow"}, [r](ir::Graph& g, ir::Node& n, PassContext& ctx) {
             if (!pow_of(n, r.exponent)) return false;
             ir::Value* x = n.input(0);
             const std::string op = r.op;
             fuse(g, {&n}, &n, op, "", 0, op == "Mul" ? std::vector<ir::Value*>{x, x} : std::vector<ir::Value*>{x}, {});
             return ctx.applied(n, r.what);
           }});
    }
    add_rule({"Div(x, c) -> Mul(x, 1/c)", {"Div"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (!uses_numpy_broadcast(n) || n.num_inputs() != 2 || !n.input(0)) return false;
                ir::Value* x = n.input(0);
                const Tensor* c = constant_value(n.input(1));
                if (!c || constant_value(x) || elem_type(x) != c->dtype() || elem_type(n.output(0)) != c->dtype())
                  return false;
                auto r = safe_reciprocal(*c);
                if (!r) return false;
                ir::Value* rv = g.add_constant(n.input(1)->name() + "_reciprocal", std::move(*r));
                fuse(g, {&n}, &n, "Mul", "", 0, {x, rv}, {});
                return ctx.applied(n, "Div(x, c) -> Mul(x, 1/c)");
              }});
  }
  const char* name() const override { return "StrengthReductionOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("reduce_strength", [] { return std::make_unique<StrengthReductionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
