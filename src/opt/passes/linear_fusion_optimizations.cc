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
//   Gemm(X, W, C) [-> Act]          -> sdx.Linear(X, W', beta * C, activation)
//
//   Gemm with alpha 1, transA 0, X 2-D, W a 2-D constant (transB: W' = W^T, a new [K, N] constant
//   named "<W>/transposed", made once and shared by every Gemm reading W),
//   C absent, beta 0, or a constant broadcasting along N only ([N], [1, N], [1] or a scalar), folded
//   with beta in X's type as the Gemm kernel scales it. Fused even without an activation: sdx.Linear
//   has the small-M and epilogue paths.
//
// The fused kernel repeats the unfused arithmetic, so results of the MatMul forms are bitwise the
// same. Gemm adds C inside the product's accumulation (beta C is C's start value), sdx.Linear after
// it: the two agree up to float summation order.
// Runs after GatedDeltaNetFusion (which takes the activation of a gated unit first) and after
// ActivationFusion (which makes Gelu/Swish out of their arithmetic forms).
#include <cstring>

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

bool fuse_gemm(ir::Graph& g, ir::Node& gemm, PassContext& ctx) {
  if (gemm.num_inputs() < 2 || gemm.num_outputs() != 1 || !gemm.domain().empty()) return false;
  if (gemm.attr_float("alpha", 1.f) != 1.f || gemm.attr_int("transA", 0) != 0) return false;
  ir::Value* x = gemm.input(0);
  const Tensor* w = constant_value(gemm.input(1));
  const DType dt = elem_type(x);
  auto rank = rank_of(x);
  if (!w || w->rank() != 2 || w->dtype() != dt || !is_float(dt) || !rank || *rank != 2) return false;
  const bool trans_b = gemm.attr_int("transB", 0) != 0;
  const int64_t k = w->shape()[trans_b ? 1 : 0], n = w->shape()[trans_b ? 0 : 1];
  std::optional<std::vector<double>> bias;
  const float beta = gemm.attr_float("beta", 1.f);
  if (gemm.num_inputs() > 2 && gemm.input(2) && beta != 0.f) {
    bias = per_axis_constant(gemm.input(2), 2, 1, n, dt);
    if (!bias) return false;
    // beta * C rounded to X's type, as the Gemm kernel computes it (exact for beta 1).
    const Tensor scaled = float_tensor(dt, Shape{n}, *bias);
    std::vector<double> c = float_values(scaled);
    for (double& v : c) v = static_cast<double>(static_cast<float>(v) * beta);
    bias = float_values(float_tensor(dt, Shape{n}, c));
  }
  Epilogue e = match_epilogue(g, gemm, "Gemm(X, W, C)", false, 2, 1, n, dt);
  if (elem_type(e.last->output(0)) != dt) return false;
  ir::Value* weight = gemm.input(1);
  if (trans_b) {
    // One transposed copy per weight, shared by every Gemm reading it (an unrolled LSTM's 16 steps
    // read one W_ih: 16 copies of 6.5 MB each evicted the others from the caches).
    const std::string name = gemm.input(1)->name() + "/transposed";
    ir::Value* shared = g.find_value(name);
    const Tensor* st = shared ? constant_value(shared) : nullptr;
    if (st && st->dtype() == dt && st->shape() == Shape{k, n}) {
      weight = shared;
    } else {
      Tensor t = Tensor::allocate(dt, Shape{k, n}).value();
      const size_t es = dtype_storage_bytes(dt, 1);
      const auto* src = static_cast<const uint8_t*>(w->raw_data());
      auto* dst = static_cast<uint8_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) std::memcpy(dst + (j * n + i) * es, src + (i * k + j) * es, es);
      weight = shared ? g.add_constant(name, std::move(t)) : g.add_initializer(name, std::move(t));
    }
  }
  std::vector<ir::Value*> inputs = {x, weight};
  if (bias) inputs.push_back(g.add_constant(gemm.name() + "_bias", float_tensor(dt, Shape{n}, *bias)));
  fuse(g, e.chain, e.last, "Linear", "sdx", 1, inputs,
       e.activation ? e.activation->attributes() : std::vector<ir::Attribute>{});
  return ctx.applied(gemm, e.what + " -> sdx.Linear");
}

class LinearFusionOptimizations final : public PatternPass {
 public:
  LinearFusionOptimizations() {
    add_rule({"MatMul + bias [+ activation] -> sdx.Linear", {"MatMul"}, fuse_linear});
    add_rule({"Gemm [+ activation] -> sdx.Linear", {"Gemm"}, fuse_gemm});
  }
  const char* name() const override { return "LinearFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fuse_linear", [] { return std::make_unique<LinearFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
