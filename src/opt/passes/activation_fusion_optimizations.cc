// ActivationFusionOptimizations (pass 18, fusion): activations that exporters write out as
// element-wise arithmetic become the one ONNX op that computes them (kernels in
// backend/cpu/kernels/elementwise_activation.cc). Mul and Add operands match in either order;
// every intermediate value must be read only inside the pattern.
//
//   GELU, erf form (PyTorch/TF/Paddle exports of gelu(x)), with B = Add(Erf(Z), 1) and
//   Z = Div(x, c) with c ~ sqrt(2), or Mul(x, c) with c ~ 1/sqrt(2):
//     Mul(Mul(x, B), 0.5)  |  Mul(Mul(x, 0.5), B)  |  Mul(x, Mul(B, 0.5))
//       -> Gelu(x) (opset 20, approximate="none")
//   GELU, tanh form (gelu(x, approximate="tanh"), HF NewGELU): the same three outer shapes with
//   B = Add(Tanh(Mul(Add(x, T), c)), 1), c ~ sqrt(2/pi), T = 0.044715 x^3 as any tree of Muls of
//   three x's (or Pow(x, 3)) and the constant: Mul(Pow(x, 3), 0.044715), Mul(Mul(x, Mul(x, x)), ..),
//   JAX's Mul(x, Mul(x, Mul(x, 0.044715))) (Magika)
//       -> Gelu(x) (opset 20, approximate="tanh")
//   SiLU: Mul(x, Sigmoid(x)) -> Swish(x) (opset 24, alpha 1)
//   Hard swish: Mul(x, HardSigmoid(x, alpha ~ 1/6, beta = 0.5)) -> HardSwish(x) (opset 14)
//   Hard swish with Clip (Paddle, TF): Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6) or Mul(.., 1/6)
//       -> HardSwish(x)
//
// Constants 0.5, 1, 3 must be exact; sqrt(2), 1/sqrt(2), sqrt(2/pi), 0.044715 and 1/6 within a
// relative 1e-5 (exporters print them with 6 to 17 digits), and every constant is one element
// of x's type with rank <= x's rank, so no broadcasting changes the shape. Only float types (the
// ops' kernels). Numerics: the fused op computes the same function in one rounding step instead
// of five or six, so results differ from the unfused graph by a few ulp (the tests check rtol
// 1e-5, atol 1e-6); x*Sigmoid(x) -> Swish is bitwise the same for float32 and float64.
// Runs before GatedDeltaNetFusion (which reads Gelu/Swish as the gate activation) and
// LinearFusion / the backend's conv epilogue fusion (which take them as the epilogue).
#include <cmath>

#include "opt/fusion_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr double kRel = 1e-5;
constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

// Nodes of a match, in any order (the anchor is last).
using Match = std::vector<ir::Node*>;

// A scalar constant operand of n equal to `value` (within rel); returns the other operand.
ir::Value* operand_with_scalar(const ir::Node* n, double value, double rel = 0.0) {
  auto [other, c] = scalar_operand(n);
  if (!other || !c) return nullptr;
  return (rel == 0.0 ? *c == value : near(*c, value, rel)) ? other : nullptr;
}

// 0.044715 * x^3 as a tree of Muls whose leaves are three x's (Pow(x, 3) counting as three) and one
// scalar constant ~ 0.044715, in any order and nesting: Mul(Pow(x, 3), c), Mul(Mul(x, Mul(x, x)), c),
// or JAX's Mul(x, Mul(x, Mul(x, c))). Appends its nodes.
bool match_scaled_cube(ir::Value* v, ir::Value* x, Match& m) {
  int xs = 0, constants = 0;
  Match nodes;
  auto walk = [&](auto&& self, ir::Value* u, int depth) -> bool {
    if (!u) return false;
    if (u == x) return ++xs <= 3;
    if (auto c = scalar_like(u, x)) return ++constants == 1 && near(*c, kGeluCubic, kRel);
    if (depth > 3) return false;
    if (ir::Node* p = producer_of(u, "Pow")) {
      auto e = scalar_like(p->input(1), x);
      if (p->input(0) != x || !e || *e != 3.0) return false;
      nodes.push_back(p);
      xs += 3;
      return xs <= 3;
    }
    ir::Node* mul = producer_of(u, "Mul");
    if (!mul || mul->num_inputs() != 2) return false;
    nodes.push_back(mul);
    return self(self, mul->input(0), depth + 1) && self(self, mul->input(1), depth + 1);
  };
  if (!walk(walk, v, 0) || xs != 3 || constants != 1) return false;
  m.insert(m.end(), nodes.begin(), nodes.end());
  return true;
}

// The bracket B = Add(F(x), 1) of either GELU form; sets *tanh_form.
bool match_bracket(ir::Value* b, ir::Value* x, Match& m, bool* tanh_form) {
  ir::Node* add = producer_of(b, "Add");
  if (!add) return false;
  ir::Value* f = operand_with_scalar(add, 1.0);
  if (!f) return false;
  if (ir::Node* erf = producer_of(f, "Erf")) {
    ir::Value* z = erf->input(0);
    ir::Node* scale = producer_of(z, "Div");
    if (scale) {
      if (scale->input(0) != x || !scalar_like(scale->input(1), x) ||
          !near(*scalar_like(scale->input(1), x), kSqrt2, kRel))
        return false;
    } else {
      scale = producer_of(z, "Mul");
      if (!scale || operand_with_scalar(scale, 1.0 / kSqrt2, kRel) != x) return false;
    }
    m.insert(m.end(), {add, erf, scale});
    *tanh_form = false;
    return true;
  }
  ir::Node* th = producer_of(f, "Tanh");
  if (!th) return false;
  ir::Node* mul_k = producer_of(th->input(0), "Mul");
  if (!mul_k) return false;
  ir::Node* sum = producer_of(operand_with_scalar(mul_k, kSqrt2OverPi, kRel), "Add");
  if (!sum) return false;
  m.insert(m.end(), {add, th, mul_k, sum});
  if (!match_scaled_cube(other_input(sum, x), x, m)) return false;
  *tanh_form = true;
  return true;
}

// The three outer shapes around the bracket, anchored on the last Mul.
bool match_gelu(ir::Node& n, ir::Value** x_out, Match& m, bool* tanh_form) {
  // (1) Mul(Mul(x, B), 0.5)
  if (ir::Node* p = producer_of(operand_with_scalar(&n, 0.5), "Mul")) {
    for (int i = 0; i < 2; ++i) {
      Match mm = {p};
      ir::Value* x = p->input(i);
      if (match_bracket(p->input(1 - i), x, mm, tanh_form)) {
        *x_out = x;
        m = mm;
        return true;
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    ir::Value* a = n.input(i);
    ir::Value* b = n.input(1 - i);
    // (2) Mul(Mul(x, 0.5), B)
    if (ir::Node* q = producer_of(a, "Mul")) {
      ir::Value* x = operand_with_scalar(q, 0.5);
      Match mm = {q};
      if (x && match_bracket(b, x, mm, tanh_form)) {
        *x_out = x;
        m = mm;
        return true;
      }
    }
    // (3) Mul(x, Mul(B, 0.5))
    if (ir::Node* r = producer_of(b, "Mul")) {
      ir::Value* bracket = operand_with_scalar(r, 0.5);
      Match mm = {r};
      if (bracket && match_bracket(bracket, a, mm, tanh_form)) {
        *x_out = a;
        m = mm;
        return true;
      }
    }
  }
  return false;
}

bool fuse_gelu(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  ir::Value* x = nullptr;
  Match m;
  bool tanh_form = false;
  if (!match_gelu(n, &x, m, &tanh_form)) return false;
  if (!is_float(elem_type(x)) || elem_type(n.output(0)) != elem_type(x)) return false;
  m.push_back(&n);
  if (!only_used_within(g, m, &n)) return false;
  fuse(g, m, &n, "Gelu", "", 20, {x}, {attr_string("approximate", tanh_form ? "tanh" : "none")});
  return ctx.applied(n, tanh_form ? "0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3))) -> Gelu(tanh)"
                                  : "0.5 * x * (1 + Erf(x / sqrt(2))) -> Gelu");
}

// Mul(x, Act(x)) -> op, for a one-node activation Act.
bool fuse_self_gated(ir::Graph& g, ir::Node& n, PassContext& ctx, const char* act, const char* op, int opset,
                     bool (*accept)(const ir::Node&), const char* what) {
  for (int i = 0; i < 2; ++i) {
    ir::Node* a = producer_of(n.input(i), act);
    ir::Value* x = n.input(1 - i);
    if (!a || a->input(0) != x || !accept(*a)) continue;
    if (!is_float(elem_type(x)) || elem_type(n.output(0)) != elem_type(x)) return false;
    if (!only_used_within(g, {a, &n}, &n)) return false;
    fuse(g, {a, &n}, &n, op, "", opset, {x}, {});
    return ctx.applied(n, what);
  }
  return false;
}

// Clip's bounds when both are the constants lo and hi (inputs from opset 11, attributes before).
bool clip_bounds_are(const ir::Node& c, double lo, double hi) {
  if (c.opset() < 11) return c.attr_float("min", -3.4e38f) == lo && c.attr_float("max", 3.4e38f) == hi;
  if (c.num_inputs() < 3 || !c.input(1) || !c.input(2)) return false;
  const std::optional<double> a = scalar_constant(c.input(1)), b = scalar_constant(c.input(2));
  return a && b && *a == lo && *b == hi;
}

// Hard swish written with Clip (Paddle's and TF's exports): Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6),
// or Mul(.., 1/6) for the Div.
bool fuse_hard_swish_clip(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  ir::Value* prod = n.op_type() == "Div" ? (scalar_constant(n.input(1)) == 6.0 ? n.input(0) : nullptr)
                                         : operand_with_scalar(&n, 1.0 / 6.0, kRel);
  ir::Node* m = prod ? producer_of(prod, "Mul") : nullptr;
  if (!m) return false;
  for (int i = 0; i < 2; ++i) {
    ir::Node* clip = producer_of(m->input(i), "Clip");
    ir::Value* x = m->input(1 - i);
    if (!clip || !clip_bounds_are(*clip, 0.0, 6.0)) continue;
    ir::Node* add = producer_of(clip->input(0), "Add");
    if (!add || operand_with_scalar(add, 3.0) != x) continue;
    if (!is_float(elem_type(x)) || elem_type(n.output(0)) != elem_type(x)) return false;
    if (!only_used_within(g, {add, clip, m, &n}, &n)) return false;
    fuse(g, {add, clip, m, &n}, &n, "HardSwish", "", 14, {x}, {});
    return ctx.applied(n, "x * Clip(x + 3, 0, 6) / 6 -> HardSwish(x)");
  }
  return false;
}

class ActivationFusionOptimizations final : public PatternPass {
 public:
  ActivationFusionOptimizations() {
    add_rule({"x * Clip(x + 3, 0, 6) / 6 -> HardSwish", {"Div", "Mul"}, fuse_hard_swish_clip});
    add_rule({"GELU arithmetic -> Gelu", {"Mul"}, fuse_gelu});
    add_rule({"Mul(x, Sigmoid(x)) -> Swish", {"Mul"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                return fuse_self_gated(
                    g, n, ctx, "Sigmoid", "Swish", 24, [](const ir::Node&) { return true; },
                    "Mul(x, Sigmoid(x)) -> Swish(x)");
              }});
    add_rule({"Mul(x, HardSigmoid(x)) -> HardSwish", {"Mul"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                return fuse_self_gated(
                    g, n, ctx, "HardSigmoid", "HardSwish", 14,
                    [](const ir::Node& h) {
                      return near(h.attr_float("alpha", 0.2f), 1.0 / 6.0, kRel) && h.attr_float("beta", 0.5f) == 0.5f;
                    },
                    "Mul(x, HardSigmoid(x, 1/6, 0.5)) -> HardSwish(x)");
              }});
  }
  const char* name() const override { return "ActivationFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fuse_activations", [] { return std::make_unique<ActivationFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
