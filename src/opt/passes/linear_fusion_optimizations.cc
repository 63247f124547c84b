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

bool fuse_linear(ir::Graph& g, ir::Node& mm, PassContext& ctx) {
  if (mm.num_inputs() != 2) return false;
  ir::Value* x = mm.input(0);
  const Tensor* w = constant_value(mm.input(1));
  const DType dt = elem_type(x);
  auto rank = rank_of(x);
  if (!w || w->rank() != 2 || w->dtype() != dt || !is_float(dt) || !rank || *rank < 1) return false;
  const int64_t n = w->shape()[1];
  const int out_rank = *rank;  // [..., K] x [K, N] -> [..., N]
  Epilogue e = match_epilogue(g, mm, "MatMul(X, W)", true, out_rank, out_rank - 1, n, dt);
  if (!e.bias && !e.activation) return false;
  if (elem_type(e.last->output(0)) != dt) return false;
  std::vector<ir::Value*> inputs = {x, mm.input(1)};
  if (e.bias) {
    // The Add's operand when it already is a [N] constant, else the expanded vector.
    const bool reuse = constant_value(e.bias_operand)->shape() == Shape{n};
    inputs.push_back(reuse ? e.bias_operand : g.add_constant(mm.name() + "_bias", float_tensor(dt, Shape{n}, *e.bias)));
  }
  fuse(g, e.chain, e.last, "Linear", "sdx", 1, inputs,
       e.activation ? e.activation->attributes() : std::vector<ir::Attribute>{});
  return ctx.applied(mm, e.what + " -> sdx.Linear");
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
