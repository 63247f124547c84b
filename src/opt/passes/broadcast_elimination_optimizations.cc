// BroadcastEliminationOptimizations (pass 3): drops explicit broadcasts that the consuming kernels
// do anyway, and puts the operands of commutative ops in a canonical order.
//
//   Op(Expand(x, s), y) -> Op(x, y)   for every user Op of the Expand, when each Op broadcasts its
//                                     inputs numpy-style (Add, Sub, Mul, Div, Pow, Mod, Max, Min, Sum,
//                                     Mean, Where, And, Or, Xor, Equal, Less[OrEqual], Greater[OrEqual],
//                                     BitShift, Bitwise{And,Or,Xor}) and, with static shapes, each
//                                     Op's output shape is the same with x as with Expand(x, s).
//                                     Exact: an element-wise op of a broadcast reads the same elements.
//   Op(c, x)  -> Op(x, c)             commutative Op (Add, Mul, Max, Min, Sum, Mean, And, Or, Xor, Equal,
//                                     Bitwise{And,Or,Xor}) with exactly two inputs, c constant and x not:
//                                     constants go second, where later patterns look for them.
//   Op(a, b)  -> Op(b, a)             same ops, neither constant, static shapes, b has more elements:
//                                     the larger tensor goes first (the DSP's order for cache reuse).
// A swap is exact for these kernels except that Max/Min of +0 and -0 (or of two NaNs) may return
// the other zero (the other NaN): equal values either way. A rewrite counts only when it swaps.
#include <set>

#include "opt/algebra_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

bool broadcasts_natively(const ir::Node& n) {
  // clang-format off
  static const std::set<std::string> kOps = {
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Where", "And", "Or", "Xor",
      "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "BitShift", "BitwiseAnd", "BitwiseOr",
      "BitwiseXor"};
  // clang-format on
  static const std::set<std::string> kVariadic = {"Max", "Min", "Sum", "Mean"};  // broadcast since opset 8
  if (!kOps.count(n.op_type()) || !uses_numpy_broadcast(n)) return false;
  return !kVariadic.count(n.op_type()) || n.opset() >= 8;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The static shapes of n's inputs, reading `with` where n reads `from`.
std::optional<std::vector<std::vector<int64_t>>> input_shapes(const ir::Node& n, const ir::Value* from,
                                                              const ir::Value* with) {
  std::vector<std::vector<int64_t>> shapes;
  for (const ir::Value* v : n.inputs()) {
    if (!v) return std::nullopt;
    auto s = static_shape(v == from ? with : v);
    if (!s) return std::nullopt;
    shapes.push_back(*s);
  }
  return shapes;
}

bool expand_is_redundant(const ir::Graph& g, const ir::Node& expand) {
  const ir::Value* x = expand.input(0);
  const ir::Value* e = expand.output(0);
  if (!x || !e || g.is_output(e) || e->users().empty()) return false;
  if (elem_type(x) == DType::kUndefined || elem_type(x) != elem_type(e)) return false;
  for (const ir::Node* u : e->users()) {
    if (u->owner() != &g || !broadcasts_natively(*u)) return false;
    auto with_expand = input_shapes(*u, e, e);
    auto with_x = input_shapes(*u, e, x);
    if (!with_expand || !with_x) return false;
    auto before = broadcast_static(*with_expand);
    auto after = broadcast_static(*with_x);
    if (!before || !after || *before != *after) return false;
    if (auto declared = static_shape(u->output(0)); declared && *declared != *before) return false;
  }
  return true;
}

// Commutative for every input (Max/Min: up to which of +0/-0 or of two NaNs comes back).
const std::vector<std::string> kCommutativeOps = {"Add", "Mul", "Max",   "Min",        "Sum",       "Mean",      "And",
                                                  "Or",  "Xor", "Equal", "BitwiseAnd", "BitwiseOr", "BitwiseXor"};

class BroadcastEliminationOptimizations final : public PatternPass {
 public:
  BroadcastEliminationOptimizations() {
    add_rule({"Op(Expand(x), y) -> Op(x, y)", {"Expand"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (!expand_is_redundant(g, n)) return false;
                ctx.applied(n, "Op(Expand(x, shape), y) -> Op(x, y) (the op broadcasts itself)");
                ir::Value* x = n.input(0);
                ir::Value* e = n.output(0);
                g.remove_node(&n);
                g.replace_all_uses(e, x);
                return true;
              }});
    add_rule({"commutative Op(c, x) -> Op(x, c); larger operand first", kCommutativeOps,
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (n.num_inputs() != 2 || !n.input(0) || !n.input(1) || !uses_numpy_broadcast(n)) return false;
                ir::Value* a = n.input(0);
                ir::Value* b = n.input(1);
                if (a == b) return false;
                const bool ca = constant_value(a) != nullptr, cb = constant_value(b) != nullptr;
                std::string what;
                if (ca && !cb) {
                  what = n.op_type() + "(c, x) -> " + n.op_type() + "(x, c) (constant second)";
                } else if (!ca && !cb) {
                  auto sa = static_shape(a), sb = static_shape(b);
                  if (!sa || !sb || numel(*sb) <= numel(*sa)) return false;
                  what = n.op_type() + "(small, large) -> " + n.op_type() + "(large, small)";
                } else {
                  return false;
                }
                g.set_input(&n, 0, b);
                g.set_input(&n, 1, a);
                return ctx.applied(n, what);
              }});
  }
  const char* name() const override { return "BroadcastEliminationOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("eliminate_broadcasts", [] { return std::make_unique<BroadcastEliminationOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
