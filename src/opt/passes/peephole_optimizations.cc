// PeepholeOptimizations (pass 6): a unary op applied to the result of another.
//
//   f(f(x)) -> f(x)           f idempotent: Relu, Abs, Floor, Ceil, Round, Sign
//   Abs(Relu(x)) -> Relu(x)   (Relu's output is never negative)
//   Neg(Neg(x))  -> x
//   Not(Not(x))  -> x
//   Log(Exp(x))  -> x         (float x)
//   Cast(Cast(x, to=T2), to=T) -> x   when T is x's type and every value of T converts to T2 exactly
//                                     (float -> double -> float, int8 -> int32 -> int8, ...)
//
// Equivalence: all exact except Log(Exp(x)), which the original computes with rounding, overflow
// (x > 88.7 gives inf in float32) and underflow (x < -103 gives -inf); the rewrite returns x itself,
// the exact value of log(exp(x)). Not done, because they are not equivalent:
//  - Exp(Log(x)) -> x: log of x <= 0 is NaN or -inf, so exp(log(x)) is NaN or 0 there, not x.
//  - Relu(Abs(x)) -> Abs(x): the Relu kernel maps NaN to 0 (x > 0 ? x : 0) and Abs(INT_MIN) wraps
//    to INT_MIN, which Relu maps to 0.
#include <set>

#include "opt/algebra_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Every value of `from` converts to `to` exactly, so converting back gives it again.
bool lossless_widening(DType from, DType to) {
  using D = DType;
  static const std::set<std::pair<D, D>> kExact = {
      {D::kBool, D::kInt8},       {D::kBool, D::kUint8},      {D::kBool, D::kInt16},       {D::kBool, D::kUint16},
      {D::kBool, D::kInt32},      {D::kBool, D::kUint32},     {D::kBool, D::kInt64},       {D::kBool, D::kUint64},
      {D::kBool, D::kFloat16},    {D::kBool, D::kBFloat16},   {D::kBool, D::kFloat32},     {D::kBool, D::kFloat64},
      {D::kInt8, D::kInt16},      {D::kInt8, D::kInt32},      {D::kInt8, D::kInt64},       {D::kInt8, D::kFloat16},
      {D::kInt8, D::kBFloat16},   {D::kInt8, D::kFloat32},    {D::kInt8, D::kFloat64},     {D::kUint8, D::kInt16},
      {D::kUint8, D::kUint16},    {D::kUint8, D::kInt32},     {D::kUint8, D::kUint32},     {D::kUint8, D::kInt64},
      {D::kUint8, D::kUint64},    {D::kUint8, D::kFloat16},   {D::kUint8, D::kBFloat16},   {D::kUint8, D::kFloat32},
      {D::kUint8, D::kFloat64},   {D::kInt16, D::kInt32},     {D::kInt16, D::kInt64},      {D::kInt16, D::kFloat32},
      {D::kInt16, D::kFloat64},   {D::kUint16, D::kInt32},    {D::kUint16, D::kUint32},    {D::kUint16, D::kInt64},
      {D::kUint16, D::kUint64},   {D::kUint16, D::kFloat32},  {D::kUint16, D::kFloat64},   {D::kInt32, D::kInt64},
      {D::kInt32, D::kFloat64},   {D::kUint32, D::kInt64},    {D::kUint32, D::kUint64},    {D::kUint32, D::kFloat64},
      {D::kFloat16, D::kFloat32}, {D::kFloat16, D::kFloat64}, {D::kBFloat16, D::kFloat32}, {D::kBFloat16, D::kFloat64},
      {D::kFloat32, D::kFloat64}};
  return kExact.count({from, to}) > 0;
}

class PeepholeOptimizations final : public PatternPass {
 public:
  PeepholeOptimizations() {
    for (const char* f : {"Relu", "Abs", "Floor", "Ceil", "Round", "Sign"}) {
      const std::string op = f;
      add_rule({op + "(" + op + "(x)) -> " + op + "(x)", {op}, [op](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                  ir::Node* inner = producer_of(n.input(0), op);
                  if (!inner || !forward_output(g, &n, inner->output(0))) return false;
                  return ctx.applied(n, op + "(" + op + "(x)) -> " + op + "(x)");
                }});
    }
    add_rule({"Abs(Relu(x)) -> Relu(x)", {"Abs"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                ir::Node* inner = producer_of(n.input(0), "Relu");
                if (!inner || !forward_output(g, &n, inner->output(0))) return false;
                return ctx.applied(n, "Abs(Relu(x)) -> Relu(x)");
              }});
    // Involutions and inverses: the outer node reads the inner node's input instead.
    struct Inverse {
      const char* outer;
      const char* inner;
      bool float_only;
    };
    for (const Inverse& inv :
         {Inverse{"Neg", "Neg", false}, Inverse{"Not", "Not", false}, Inverse{"Log", "Exp", true}}) {
      const std::string outer = inv.outer, inner_op = inv.inner;
      const bool float_only = inv.float_only;
      const std::string what = outer + "(" + inner_op + "(x)) -> x";
      add_rule({what, {outer}, [inner_op, float_only, what](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                  ir::Node* inner = producer_of(n.input(0), inner_op);
                  if (!inner || !inner->input(0)) return false;
                  ir::Value* x = inner->input(0);
                  const DType t = elem_type(x);
                  if (t == DType::kUndefined || t != elem_type(n.output(0)) || (float_only && !is_float(t)))
                    return false;
                  if (!forward_output(g, &n, x)) return false;
                  remove_if_unused(g, inner);
                  return ctx.applied(n, what);
                }});
    }
    add_rule({"Cast(Cast(x, wider), x's type) -> x", {"Cast"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                ir::Node* inner = producer_of(n.input(0), "Cast");
                if (!inner || !inner->input(0)) return false;
                ir::Value* x = inner->input(0);
                const DType t = elem_type(x);
                const DType mid = elem_type(inner->output(0));
                if (t == DType::kUndefined || elem_type(n.output(0)) != t || !lossless_widening(t, mid)) return false;
                if (!forward_output(g, &n, x)) return false;
                remove_if_unused(g, inner);
                return ctx.applied(n,
                                   std::string("Cast(Cast(x, ") + dtype_name(mid) + "), " + dtype_name(t) + ") -> x");
              }});
  }
  const char* name() const override { return "PeepholeOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("collapse_op_pairs", [] { return std::make_unique<PeepholeOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
