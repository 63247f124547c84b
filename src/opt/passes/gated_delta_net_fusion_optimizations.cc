// GatedDeltaNetFusionOptimizations (pass 20, fusion): gated linear units (the feed-forward of
// Llama/Mistral/Qwen (SwiGLU), T5 v1.1 / Gemma (GEGLU), GLU variants) become one
// sdx.GatedLinearUnit (kernel: backend/cpu/kernels/fused_glu.cc), so the gate act(A) is never
// written to memory. Mul operands match in either order.
//
//   Mul(Act(A), B)                      -> sdx.GatedLinearUnit(A, B, activation)
//   Mul(Act(Split(X)[0]), Split(X)[1])  -> sdx.GatedLinearUnit(X, axis, activation)
//        (Split into two equal halves along `axis`: split [H, H] as attribute (< opset 13) or
//         constant input, or no sizes / num_outputs=2 with X's static dim there even)
//   Act and its activation attribute: Swish(alpha) / Mul(A, Sigmoid(A)) -> "silu",
//   Gelu -> "gelu" / "gelu_tanh", Sigmoid -> "sigmoid" (the original GLU), Relu -> "relu" (ReGLU).
//
// A and B are typically MatMul (or MatMul + bias) outputs, but any two values of one float type
// qualify when A has the output's shape (B may broadcast: the kernel broadcasts as Mul does; a
// broadcast A, as in squeeze-excitation, would repeat the activation per output element). Mul(Sigmoid(A), A) is left to
// ActivationFusion (it is SiLU, not a gate). The gate's intermediate values must be read only
// inside the pattern; in the split form the Split's two outputs too (else the two-input form
// applies). The fused kernel repeats the unfused arithmetic, so results are bitwise the same.
#include "opt/fusion_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

using Match = std::vector<ir::Node*>;

// The gate activation producing v: its nodes, its input A and its epilogue form.
struct Gate {
  Match nodes;
  ir::Value* a = nullptr;
  EpilogueActivation act;
};

std::optional<Gate> gate_of(ir::Value* v) {
  ir::Node* p = v ? v->producer() : nullptr;
  if (!p || !p->domain().empty() || p->num_outputs() != 1) return std::nullopt;
  const std::string& op = p->op_type();
  if (op == "Swish" || op == "Gelu" || op == "Sigmoid" || op == "Relu") {
    auto act = epilogue_activation(*p);
    if (!act) return std::nullopt;
    return Gate{{p}, p->input(0), *act};
  }
  if (op == "Mul") {  // SiLU written out: Mul(A, Sigmoid(A))
    for (int i = 0; i < 2; ++i) {
      ir::Node* s = producer_of(p->input(i), "Sigmoid");
      if (s && s->input(0) == p->input(1 - i)) return Gate{{p, s}, s->input(0), {"silu", {}, {}, {}}};
    }
  }
  return std::nullopt;
}

// a and b have the same known shape: equal fixed dims or the same symbolic name per dim.
bool same_shape(const ir::Value* a, const ir::Value* b) {
  const auto& sa = a->type().shape;
  const auto& sb = b->type().shape;
  if (a->type().kind != ir::TypeInfo::Kind::kTensor || b->type().kind != ir::TypeInfo::Kind::kTensor || !sa || !sb ||
      sa->size() != sb->size())
    return false;
  for (size_t i = 0; i < sa->size(); ++i) {
    const ir::Dim &x = (*sa)[i], &y = (*sb)[i];
    if (x.is_fixed() ? x.value != y.value : (x.param.empty() || x.param != y.param)) return false;
  }
  return true;
}

// Split(X) into two equal halves: its axis, or nullopt.
std::optional<int64_t> halving_split(const ir::Node& split) {
  if (split.num_outputs() != 2) return std::nullopt;
  const int64_t axis = split.attr_int("axis", 0);
  std::vector<int64_t> sizes;
  if (split.opset() < 13) {
    sizes = split.attr_ints("split");
  } else if (split.num_inputs() > 1 && split.input(1)) {
    const Tensor* t = constant_value(split.input(1));
    if (!t || t->numel() != 2 || !uniform_constant(split.input(1))) return std::nullopt;  // [H, H]
    return axis;
  }
  if (!sizes.empty()) {
    if (sizes.size() != 2 || sizes[0] != sizes[1]) return std::nullopt;
    return axis;
  }
  // Equal split of the dim into 2 (also num_outputs=2): the static dim must be even.
  auto s = static_shape(split.input(0));
  if (!s) return std::nullopt;
  const int64_t r = static_cast<int64_t>(s->size());
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r || (*s)[static_cast<size_t>(a)] % 2 != 0) return std::nullopt;
  return axis;
}

bool fuse_glu(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  if (n.num_inputs() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    auto gate = gate_of(n.input(i));
    ir::Value* b = n.input(1 - i);
    if (!gate || gate->a == b) continue;  // Mul(Act(A), A) is not a gate
    const DType dt = elem_type(gate->a);
    if (!is_float(dt) || elem_type(b) != dt || elem_type(n.output(0)) != dt) return false;
    Match m = gate->nodes;
    m.push_back(&n);
    if (!only_used_within(g, m, &n)) return false;
    std::vector<ir::Attribute> attrs = gate->act.attributes();
    // Split form: both halves of one Split (same shape, no broadcasting), the first one gated.
    ir::Node* split = gate->a->producer();
    if (split && split == b->producer() && split->op_type() == "Split" && split->domain().empty() &&
        gate->a->producer_output() == 0 && b->producer_output() == 1) {
      auto axis = halving_split(*split);
      Match ms = m;
      ms.push_back(split);
      if (axis && only_used_within(g, ms, &n)) {
        attrs.push_back(attr_int("axis", *axis));
        fuse(g, ms, &n, "GatedLinearUnit", "sdx", 1, {split->input(0)}, attrs);
        return ctx.applied(n, "Mul(" + gate->act.name + "(Split(X)[0]), Split(X)[1]) -> sdx.GatedLinearUnit(X)");
      }
    }
    // A broadcast gate (squeeze-excitation: Mul(X, Sigmoid(S)) with S [N, C, 1, 1]) would compute
    // the activation once per output element instead of once per element of A: leave it.
    if (!same_shape(gate->a, n.output(0))) continue;
    fuse(g, m, &n, "GatedLinearUnit", "sdx", 1, {gate->a, b}, attrs);
    return ctx.applied(n, "Mul(" + gate->act.name + "(A), B) -> sdx.GatedLinearUnit(A, B)");
  }
  return false;
}

class GatedDeltaNetFusionOptimizations final : public PatternPass {
 public:
  GatedDeltaNetFusionOptimizations() { add_rule({"Mul(Act(A), B) -> sdx.GatedLinearUnit", {"Mul"}, fuse_glu}); }
  const char* name() const override { return "GatedDeltaNetFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fuse_gated_linear_units", [] { return std::make_unique<GatedDeltaNetFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
