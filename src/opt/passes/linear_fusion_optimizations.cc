// LinearFusionOptimizations (pass 21, fusion): a fully connected layer written as MatMul, bias
// Add and activation becomes one sdx.Linear (kernel: backend/cpu/kernels/fused_linear.cc: one
// gemm over all rows, then bias and activation in one pass over the output).
//
//   Add(MatMul(X, W), b) [-> Act]   -> sdx.Linear(X, W, b, activation)
//   MatMul(X, W) -> Act             -> sdx.Linear(X, W, activation)
//
//   W: a 2-D constant [K, N] (so the product is X [..., K] -> [..., N]); X of known rank >= 1;
//   b: a constant of X's type whose shape is 1s then N (rank <= the product's) or one element;
//      it becomes a [N] constant (Add operands in either order);
//   Act (what activation.h's epilogue computes exactly as the ONNX op): Relu, LeakyRelu, Sigmoid,
//   Tanh, Gelu (both forms), Swish (SiLU), HardSigmoid, HardSwish, Clip with constant bounds
//   (relu6 = Clip(0, 6)).
//   Every fused intermediate value must be read only by the next op of the chain. Float types.
//
// The fused kernel repeats the unfused arithmetic, so results are bitwise the same.
// Runs after GatedDeltaNetFusion (which takes the activation of a gated unit first) and after
// ActivationFusion (which makes Gelu/Swish out of their arithmetic forms).
#include "opt/fusion_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// The single reader of v (v not a graph output), or null.
ir::Node* only_reader(const ir::Graph& g, const ir::Value* v) { return has_single_use(g, v) ? v->users()[0] : nullptr; }

bool fuse_linear(ir::Graph& g, ir::Node& mm, PassContext& ctx) {
  if (mm.num_inputs() != 2) return false;
  ir::Value* x = mm.input(0);
  const Tensor* w = constant_value(mm.input(1));
  const DType dt = elem_type(x);
  auto rank = rank_of(x);
  if (!w || w->rank() != 2 || w->dtype() != dt || !is_float(dt) || !rank || *rank < 1) return false;
  const int64_t n = w->shape()[1];
  const int out_rank = *rank;  // [..., K] x [K, N] -> [..., N]
  std::vector<ir::Node*> chain = {&mm};
  ir::Node* last = &mm;
  std::optional<std::vector<double>> bias;
  ir::Value* bias_value = nullptr;  // the Add's operand, when it already is a [N] constant
  std::string what = "MatMul(X, W)";
  ir::Node* next = only_reader(g, mm.output(0));
  if (next && next->op_type() == "Add" && next->domain().empty() && next->num_inputs() == 2) {
    ir::Value* b = other_input(next, mm.output(0));
    if (b && b != mm.output(0)) bias = per_axis_constant(b, out_rank, out_rank - 1, n, dt);
    if (bias) {
      if (constant_value(b)->shape() == Shape{n}) bias_value = b;
      chain.push_back(next);
      last = next;
      what = "Add(MatMul(X, W), b)";
      next = only_reader(g, next->output(0));
    }
  }
  std::optional<EpilogueActivation> act;
  if (next && next->input(0) == last->output(0)) act = epilogue_activation(*next);
  if (act) {
    chain.push_back(next);
    last = next;
    what = next->op_type() + "(" + what + ")";
  }
  if (!bias && !act) return false;
  if (elem_type(last->output(0)) != dt) return false;
  std::vector<ir::Value*> inputs = {x, mm.input(1)};
  if (bias)
    inputs.push_back(bias_value ? bias_value : g.add_constant(mm.name() + "_bias", float_tensor(dt, Shape{n}, *bias)));
  fuse(g, chain, last, "Linear", "sdx", 1, inputs, act ? act->attributes() : std::vector<ir::Attribute>{});
  return ctx.applied(mm, what + " -> sdx.Linear");
}

class LinearFusionOptimizations final : public PatternPass {
 public:
  LinearFusionOptimizations() { add_rule({"MatMul + bias [+ activation] -> sdx.Linear", {"MatMul"}, fuse_linear}); }
  const char* name() const override { return "LinearFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar(2100, [] { return std::make_unique<LinearFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
