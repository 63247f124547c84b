// SelectWhereOptimizations (pass 11): Where whose result is statically one of its branches.
//   Where(c, a, b) with c a constant, all true   -> a
//   Where(c, a, b) with c a constant, all false  -> b
//   Where(c, x, x)                               -> x
// Only when the broadcast of the three inputs is the chosen branch's own shape: every other input
// has rank <= the branch's and each of its dims (aligned from the right) is a fixed 1 or the same
// fixed dim as the branch's. Where([true, true], a:[1], b:[2]) is [2], not a: it stays. Element
// types are equal by Where's definition; forward_output checks them anyway.
// Order: after ConstantFunctionOptimizations (200), which turns computed masks into constants.
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Broadcasting `other` against `branch` gives branch's shape (static information only).
bool broadcasts_into(const ir::Value* other, const ir::Value* branch) {
  if (!other || !branch) return false;
  const auto& o = other->type().shape;
  const auto& b = branch->type().shape;
  if (other->type().kind != ir::TypeInfo::Kind::kTensor || branch->type().kind != ir::TypeInfo::Kind::kTensor || !o ||
      !b || o->size() > b->size())
    return false;
  const size_t shift = b->size() - o->size();
  for (size_t i = 0; i < o->size(); ++i) {
    const ir::Dim& od = (*o)[i];
    const ir::Dim& bd = (*b)[i + shift];
    if (od.is_fixed() && od.value == 1) continue;
    if (!od.is_fixed() || !bd.is_fixed() || od.value != bd.value) return false;
  }
  return true;
}

bool select_branch(ir::Graph& g, ir::Node& n, int branch, const std::string& what, PassContext& ctx) {
  const ir::Value* cond = n.input(0);
  const ir::Value* other = n.input(branch == 1 ? 2 : 1);
  ir::Value* chosen = n.input(branch);
  if (!broadcasts_into(cond, chosen) || !broadcasts_into(other, chosen)) return false;
  return forward_output(g, &n, chosen) && ctx.applied(n, what);
}

class SelectWhereOptimizations final : public PatternPass {
 public:
  SelectWhereOptimizations() {
    add_rule({"Where(constant c, a, b) -> a or b", {"Where"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (n.num_inputs() != 3) return false;
                const Tensor* c = constant_value(n.input(0));
                if (!c || c->dtype() != DType::kBool || c->numel() == 0) return false;
                const auto* v = c->data<uint8_t>();  // bools are stored one byte each
                for (int64_t i = 1; i < c->numel(); ++i)
                  if ((v[i] != 0) != (v[0] != 0)) return false;
                return v[0] != 0 ? select_branch(g, n, 1, "Where(all-true c, a, b) -> a", ctx)
                                 : select_branch(g, n, 2, "Where(all-false c, a, b) -> b", ctx);
              }});
    add_rule({"Where(c, x, x) -> x", {"Where"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (n.num_inputs() != 3 || !n.input(1) || n.input(1) != n.input(2)) return false;
                return select_branch(g, n, 1, "Where(c, x, x) -> x", ctx);
              }});
  }
  const char* name() const override { return "SelectWhereOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("simplify_where", [] { return std::make_unique<SelectWhereOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
