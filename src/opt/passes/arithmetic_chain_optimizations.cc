// ArithmeticChainOptimizations (pass 7): folds the constants of a two-op chain into one.
//
//   Add(Add(x, c1), c2) -> Add(x, c1 + c2)        Sub(Add(x, c1), c2) -> Add(x, c1 - c2)
//   Add(Sub(x, c1), c2) -> Add(x, c2 - c1)        Sub(Sub(x, c1), c2) -> Sub(x, c1 + c2)
//   Mul(Mul(x, c1), c2) -> Mul(x, c1 * c2)
//   Add(Mul(x, c1), Mul(x, c2)) -> Mul(x, c1 + c2)
//   Sub(Mul(x, c1), Mul(x, c2)) -> Mul(x, c1 - c2)
// (constants on either side of Add and Mul). The inner nodes must be read only by the outer one.
// The combined constant is computed by the Add/Sub/Mul CPU kernel on c1 and c2, so it broadcasts
// like the original chain: the output shape, broadcast(x, c1, c2), does not change. Chains whose
// combined constant would be large (over max(1 KiB, bytes of c1 + bytes of c2)) are left alone.
//
// Tolerance: exact for integer types (the kernels wrap, and wrapping arithmetic is associative and
// distributive). For floats the rewrite reassociates, so results differ by rounding: a few ulps of
// the largest intermediate (|x| + |c1| + |c2| for Add chains, |x * c1 * c2| for Mul chains); where
// the original cancels catastrophically ((x + 1e8) - 1e8) the rewrite is the more accurate one, and
// c1 * c2 may overflow where (x * c1) * c2 did not when |c1 * c2| exceeds the type's range.
#include "opt/algebra_util.h"
#include "opt/constant_eval.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr size_t kMinCombinedBytes = 1024;

// n = x + sign * c (Add with a constant on either side, or Sub with the constant second).
struct Term {
  ir::Value* x = nullptr;
  ir::Value* c = nullptr;
  int sign = 1;
};

bool binary(const ir::Node& n) { return n.num_inputs() == 2 && n.input(0) && n.input(1) && uses_numpy_broadcast(n); }

std::optional<Term> constant_term(const ir::Node& n, bool allow_sub) {
  if (!binary(n)) return std::nullopt;
  const bool c0 = constant_value(n.input(0)) != nullptr, c1 = constant_value(n.input(1)) != nullptr;
  if (c1 && !c0) return Term{n.input(0), n.input(1), allow_sub && n.op_type() == "Sub" ? -1 : 1};
  if (c0 && !c1 && n.op_type() != "Sub") return Term{n.input(1), n.input(0), 1};
  return std::nullopt;
}

// op(c1, c2) by the kernel, when not larger than the cap and of x's element type.
std::optional<Tensor> combine(const std::string& op, const ir::Value* c1, const ir::Value* c2, const ir::Value* x) {
  const Tensor* a = constant_value(c1);
  const Tensor* b = constant_value(c2);
  const DType t = elem_type(x);
  if (!a || !b || t == DType::kUndefined || a->dtype() != t || b->dtype() != t) return std::nullopt;
  auto shape = broadcast_static({a->shape().dims(), b->shape().dims()});
  if (!shape) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : *shape) n *= d;
  if (dtype_storage_bytes(t, n) > std::max(kMinCombinedBytes, a->nbytes() + b->nbytes())) return std::nullopt;
  auto r = evaluate_op(op, {*a, *b});
  if (!r.is_ok() || r->dtype() != t) return std::nullopt;
  return std::move(r).value();
}

// Replaces `outer` (and `inners`, read only by it) by op(x, c).
void replace(ir::Graph& g, ir::Node& outer, const std::vector<ir::Node*>& inners, const std::string& op, ir::Value* x,
             Tensor c) {
  ir::Value* cv = g.add_constant(outer.name() + "_folded", std::move(c));
  std::vector<ir::Node*> nodes = inners;
  nodes.push_back(&outer);
  fuse(g, nodes, &outer, op, "", 0, {x, cv}, {});
}

bool single_reader(const ir::Graph& g, const ir::Node* inner, const ir::Node& outer) {
  const ir::Value* v = inner->output(0);
  return has_single_use(g, v) && v->users()[0] == &outer;
}

class ArithmeticChainOptimizations final : public PatternPass {
 public:
  ArithmeticChainOptimizations() {
    add_rule({"Add/Sub(Add/Sub(x, c1), c2) -> Add/Sub(x, c)",
              {"Add", "Sub"},
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                auto outer = constant_term(n, true);
                if (!outer || !outer->x->producer()) return false;
                ir::Node* inner = outer->x->producer();
                if ((inner->op_type() != "Add" && inner->op_type() != "Sub") || !inner->domain().empty()) return false;
                auto in = constant_term(*inner, true);
                if (!in || !single_reader(g, inner, n)) return false;
                // x + s1 c1 + s2 c2
                std::optional<Tensor> c;
                std::string op = "Add";
                if (in->sign > 0 && outer->sign > 0)
                  c = combine("Add", in->c, outer->c, in->x);
                else if (in->sign > 0)
                  c = combine("Sub", in->c, outer->c, in->x);
                else if (outer->sign > 0)
                  c = combine("Sub", outer->c, in->c, in->x);
                else {
                  c = combine("Add", in->c, outer->c, in->x);
                  op = "Sub";
                }
                if (!c || elem_type(in->x) != elem_type(n.output(0))) return false;
                const std::string what = n.op_type() + "(" + inner->op_type() + "(x, c1), c2) -> " + op + "(x, c)";
                replace(g, n, {inner}, op, in->x, std::move(*c));
                return ctx.applied(n, what);
              }});
    add_rule({"Mul(Mul(x, c1), c2) -> Mul(x, c1 * c2)", {"Mul"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                auto outer = constant_term(n, false);
                if (!outer) return false;
                ir::Node* inner = producer_of(outer->x, "Mul");
                if (!inner) return false;
                auto in = constant_term(*inner, false);
                if (!in || !single_reader(g, inner, n) || elem_type(in->x) != elem_type(n.output(0))) return false;
                auto c = combine("Mul", in->c, outer->c, in->x);
                if (!c) return false;
                replace(g, n, {inner}, "Mul", in->x, std::move(*c));
                return ctx.applied(n, "Mul(Mul(x, c1), c2) -> Mul(x, c1 * c2)");
              }});
    add_rule({"Add/Sub(Mul(x, c1), Mul(x, c2)) -> Mul(x, c1 +/- c2)",
              {"Add", "Sub"},
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (!binary(n)) return false;
                ir::Node* m1 = producer_of(n.input(0), "Mul");
                ir::Node* m2 = producer_of(n.input(1), "Mul");
                if (!m1 || !m2 || m1 == m2) return false;
                auto t1 = constant_term(*m1, false);
                auto t2 = constant_term(*m2, false);
                if (!t1 || !t2 || t1->x != t2->x || !single_reader(g, m1, n) || !single_reader(g, m2, n)) return false;
                if (elem_type(t1->x) != elem_type(n.output(0))) return false;
                auto c = combine(n.op_type(), t1->c, t2->c, t1->x);
                if (!c) return false;
                const std::string what = n.op_type() + "(Mul(x, c1), Mul(x, c2)) -> Mul(x, c1 " +
                                         (n.op_type() == "Add" ? "+" : "-") + " c2)";
                replace(g, n, {m1, m2}, "Mul", t1->x, std::move(*c));
                return ctx.applied(n, what);
              }});
  }
  const char* name() const override { return "ArithmeticChainOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("fold_arithmetic_chains", [] { return std::make_unique<ArithmeticChainOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
