// ReorderingOptimizations (pass 4): removes layout shuffles that compose away or that a consumer can
// absorb.
//
//   Transpose(Transpose(x, p1), p2) -> x                      when p1 then p2 is the identity
//   Transpose(Transpose(x, p1), p2) -> Transpose(x, q)        otherwise (or when the outer Transpose
//                                                             makes a graph output), q[i] = p1[p2[i]]
//   Transpose(x, identity perm)     -> x
//   Gemm(Transpose(A), B)           -> Gemm(A, B, transA = !transA)   (likewise B and transB; a 2-D
//                                                                      Transpose is always [1, 0])
//   MatMul(a, Transpose(W, [1, 0])) -> MatMul(a, W^T)         W a 2-D constant, W^T a new constant
//                                                             (MatMul has no transpose flags; either
//                                                             operand, when the Transpose has no
//                                                             other reader)
// All exact: the rewritten graph reads the same elements. The DSP's reassociation of
// associative chains is not done here: floating-point addition and multiplication are not
// associative (ArithmeticChainOptimizations folds constant chains, with a stated tolerance).
#include "opt/algebra_util.h"
#include "opt/constant_eval.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// The permutation of a Transpose (the attribute, or reversed dims when absent and the rank is known).
std::optional<std::vector<int64_t>> permutation(const ir::Node& t) {
  if (const ir::Attribute* a = t.attr("perm")) {
    if (a->type != ir::AttrType::kInts) return std::nullopt;
    std::vector<bool> seen(a->ints.size(), false);
    for (int64_t p : a->ints) {
      if (p < 0 || p >= static_cast<int64_t>(a->ints.size()) || seen[static_cast<size_t>(p)]) return std::nullopt;
      seen[static_cast<size_t>(p)] = true;
    }
    return a->ints;
  }
  const std::vector<ir::Dim>* dims = known_dims(t.input(0));
  if (!dims) return std::nullopt;
  std::vector<int64_t> perm;
  for (size_t i = dims->size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// A default-domain Transpose swapping the two dims of a 2-D value, producing v.
ir::Node* transpose_2d(const ir::Value* v) {
  ir::Node* t = producer_of(v, "Transpose");
  if (!t || !t->input(0)) return nullptr;
  auto perm = permutation(*t);
  return perm && *perm == std::vector<int64_t>{1, 0} ? t : nullptr;
}

class ReorderingOptimizations final : public PatternPass {
 public:
  ReorderingOptimizations() {
    add_rule({"Transpose(Transpose(x)) -> x or Transpose(x)",
              {"Transpose"},
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                ir::Node* inner = producer_of(n.input(0), "Transpose");
                if (!inner || !inner->input(0)) return false;
                auto p1 = permutation(*inner);
                auto p2 = permutation(n);
                if (!p1 || !p2 || p1->size() != p2->size()) return false;
                std::vector<int64_t> q(p2->size());
                for (size_t i = 0; i < q.size(); ++i) q[i] = (*p1)[static_cast<size_t>((*p2)[i])];
                ir::Value* x = inner->input(0);
                if (is_identity(q) && forward_output(g, &n, x)) {
                  remove_if_unused(g, inner);
                  return ctx.applied(n, "Transpose(Transpose(x)) -> x");
                }
                // Not identity, or a graph output (which keeps its producer): one Transpose instead of two.
                g.set_input(&n, 0, x);
                n.set_attribute(attr_ints("perm", q));
                remove_if_unused(g, inner);
                return ctx.applied(n, "Transpose(Transpose(x, p1), p2) -> Transpose(x, p1 o p2)");
              }});
    add_rule({"Transpose(x, identity) -> x", {"Transpose"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                auto perm = permutation(n);
                if (!perm || !is_identity(*perm) || !n.input(0)) return false;
                return forward_output(g, &n, n.input(0)) && ctx.applied(n, "Transpose(x, identity perm) -> x");
              }});
    add_rule({"Gemm(Transpose(A), B) -> Gemm(A, B, transA)", {"Gemm"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                bool changed = false;
                for (int i = 0; i < 2; ++i) {
                  ir::Node* t = transpose_2d(n.input(i));
                  if (!t) continue;
                  const char* flag = i == 0 ? "transA" : "transB";
                  g.set_input(&n, i, t->input(0));
                  n.set_attribute(attr_int(flag, n.attr_int(flag, 0) ? 0 : 1));
                  remove_if_unused(g, t);
                  changed = true;
                  ctx.applied(
                      n, std::string("Gemm(Transpose(") + (i == 0 ? "A" : "B") + ")) -> Gemm(" + flag + " flipped)");
                }
                return changed;
              }});
    add_rule({"MatMul(a, Transpose(W)) -> MatMul(a, W^T)", {"MatMul"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                bool changed = false;
                for (int i = 0; i < 2; ++i) {
                  ir::Node* t = transpose_2d(n.input(i));
                  if (!t || !has_single_use(g, n.input(i))) continue;
                  const Tensor* w = constant_value(t->input(0));
                  if (!w || w->rank() != 2) continue;
                  auto wt = evaluate_op("Transpose", {*w}, {attr_ints("perm", {1, 0})});
                  if (!wt.is_ok()) continue;
                  g.set_input(&n, i, g.add_constant(t->input(0)->name() + "_transposed", std::move(wt).value()));
                  remove_if_unused(g, t);
                  changed = true;
                  ctx.applied(n, "MatMul(Transpose(W)) -> MatMul(W^T) (constant transposed)");
                }
                return changed;
              }});
  }
  const char* name() const override { return "ReorderingOptimizations"; }
  PassCategory category() const override { return PassCategory::kLayout; }
};

const PassRegistrar kRegistrar("fold_transposes", [] { return std::make_unique<ReorderingOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
