// AlgebraicOptimizations (pass 5): algebraic identities.
//
//   Add(x, 0), Add(0, x), Sub(x, 0) -> x
//   Mul(x, 1), Mul(1, x), Div(x, 1) -> x
//   Pow(x, 1)                       -> x
//   Sqrt(Mul(x, x)), Sqrt(Pow(x, 2)) -> Abs(x)       (float x)
//   Pow(x, 0.5)                     -> Sqrt(x)       (float x)
//   Neg(Sub(a, b))                  -> Sub(b, a)     (the Sub read only by the Neg)
//
// The constant is any constant whose elements are all equal to 0 (1, 2, 0.5), of any numeric type,
// and only when it broadcasts into x without changing x's shape (rank(c) <= rank(x), each dim of c
// 1 or x's fixed dim) and x has the output's element type. Log(1) -> 0 is constant folding
// (ConstantFunctionOptimizations); Mul(x, 0) -> 0 is not done (NaN * 0 and Inf * 0 are NaN).
//
// Equivalence, for every input of the declared types:
//  - x - 0, x * 1, x / 1, pow(x, 1), -(a - b) = b - a are exact (integer arithmetic wraps; an
//    integer x to a float power 1 is left alone: the kernel goes through double);
//    x + 0 and b - a differ from the original only in the sign of a zero result (-0 + 0 is +0;
//    -(a - a) is -0), which compares equal.
//  - sqrt(x * x) is |x| exactly unless x * x overflows or underflows (float32: |x| > 1.8e19 or
//    |x| < 1e-19), where the original loses |x| to inf or 0 and Abs keeps the exact value.
//  - pow(x, 0.5) and sqrt(x) agree to 1 ulp (the Pow kernel computes in double) except at x = -0
//    (Sqrt keeps -0) and x = -inf (Sqrt gives NaN, pow +inf).
#include "opt/algebra_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Input `ci` of n is a constant equal everywhere to `value` that broadcasts into input `xi` without
// changing its shape, and input `xi` has n's output element type.
bool neutral_operand(const ir::Node& n, int xi, int ci, double value) {
  const ir::Value* x = n.input(xi);
  const Tensor* c = constant_value(n.input(ci));
  if (!x || !c || constant_value(x)) return false;
  auto u = uniform_constant(n.input(ci));
  if (!u || *u != value || !broadcasts_into(c->shape().dims(), x)) return false;
  const DType t = elem_type(x);
  return t != DType::kUndefined && t == elem_type(n.output(0));
}

// An identity element: Op(x, value) -> x (and Op(value, x) -> x when either_side).
struct Identity {
  const char* op;
  double value;
  bool either_side;  // commutative: c may also come first
};

// Pow(x, c) with c uniformly `exponent`, shape-neutral, float x.
bool pow_with_exponent(const ir::Node& p, double exponent) {
  return uses_numpy_broadcast(p) && is_float(elem_type(p.input(0))) && neutral_operand(p, 0, 1, exponent);
}

class AlgebraicOptimizations final : public PatternPass {
 public:
  AlgebraicOptimizations() {
    for (const Identity& id : {Identity{"Add", 0.0, true}, Identity{"Sub", 0.0, false}, Identity{"Mul", 1.0, true},
                               Identity{"Div", 1.0, false}, Identity{"Pow", 1.0, false}}) {
      const std::string op = id.op;
      const std::string c = id.value == 0.0 ? "0" : "1";
      add_rule({op + "(x, " + c + ") -> x", {op}, [id, op, c](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                  if (!uses_numpy_broadcast(n) || n.num_inputs() != 2) return false;
                  // Pow of an integer base by a float exponent computes in double: not x beyond 2^53.
                  if (op == "Pow" && !is_float(elem_type(n.input(0))) && !dtype_is_int(elem_type(n.input(1))))
                    return false;
                  for (int xi = 0; xi < (id.either_side ? 2 : 1); ++xi) {
                    if (!neutral_operand(n, xi, 1 - xi, id.value)) continue;
                    if (!forward_output(g, &n, n.input(xi))) return false;
                    return ctx.applied(n, xi == 0 ? op + "(x, " + c + ") -> x" : op + "(" + c + ", x) -> x");
                  }
                  return false;
                }});
    }
    add_rule({"Sqrt(x * x) -> Abs(x)", {"Sqrt"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                ir::Value* x = nullptr;
                ir::Node* p = nullptr;
                if (ir::Node* m = producer_of(n.input(0), "Mul");
                    m && m->num_inputs() == 2 && m->input(0) && m->input(0) == m->input(1)) {
                  p = m;
                  x = m->input(0);
                } else if (ir::Node* w = producer_of(n.input(0), "Pow"); w && pow_with_exponent(*w, 2.0)) {
                  p = w;
                  x = w->input(0);
                }
                if (!x || !is_float(elem_type(x)) || elem_type(x) != elem_type(n.output(0))) return false;
                const std::string what =
                    "Sqrt(" + p->op_type() + (p->op_type() == "Mul" ? "(x, x)" : "(x, 2)") + ") -> Abs(x)";
                fuse(g, {&n}, &n, "Abs", "", 0, {x}, {});
                remove_if_unused(g, p);
                return ctx.applied(n, what);
              }});
    add_rule({"Pow(x, 0.5) -> Sqrt(x)", {"Pow"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (!pow_with_exponent(n, 0.5)) return false;
                fuse(g, {&n}, &n, "Sqrt", "", 0, {n.input(0)}, {});
                return ctx.applied(n, "Pow(x, 0.5) -> Sqrt(x)");
              }});
    add_rule({"Neg(Sub(a, b)) -> Sub(b, a)", {"Neg"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                ir::Node* s = producer_of(n.input(0), "Sub");
                if (!s || s->num_inputs() != 2 || !s->input(0) || !s->input(1) || !uses_numpy_broadcast(*s))
                  return false;
                if (!has_single_use(g, n.input(0))) return false;
                ir::Value* a = s->input(0);
                ir::Value* b = s->input(1);
                fuse(g, {s, &n}, &n, "Sub", "", s->opset(), {b, a}, {});
                return ctx.applied(n, "Neg(Sub(a, b)) -> Sub(b, a)");
              }});
  }
  const char* name() const override { return "AlgebraicOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("simplify_algebra", [] { return std::make_unique<AlgebraicOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
