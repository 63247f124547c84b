// ConvEpilogueFusionOptimizations (pass 24, the CPU backend pass in the slot the DSP document
// gives CuDNNFunctionOptimizations): a convolution's bias add and activation are applied by the
// convolution itself, on each output block right after its gemm, instead of in separate passes
// over the whole output (kernel: backend/cpu/kernels/fused_conv.cc).
//
//   Add(Conv(X, W), b)             -> Conv(X, W, b)
//   Act(Conv(X, W, B?))            -> sdx.FusedConv(X, W, B?, activation)
//   Act(Add(Conv(X, W), b))        -> sdx.FusedConv(X, W, b, activation)
//
//   b: a constant of X's type broadcasting only along the channel axis ([M, 1, .., 1],
//      [1, M, 1, .., 1], or one element), folded only into a Conv without bias (its own bias
//      would be added first: a different rounding) and only for float32/float64 (Conv rounds a
//      16-bit sum before a separate Add, not before its bias); becomes a [M] constant. Add
//      operands in either order. W's shape must be static (it gives M and the output rank).
//   Act: Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Swish (SiLU, as in YOLO), HardSigmoid, HardSwish
//      (MobileNetV3), Clip with constant bounds (relu6), as activation.h computes them.
//   Clamp(Act(...)) -> sdx.FusedConv(..., activation, activation_clamp [lo, hi]): after Relu or LeakyRelu,
//      a Max / Min with a scalar constant or a Clip with constant bounds (openWakeWord's embedding model
//      follows every LeakyRelu with Max(x, -0.4)), float32 / float64 (fusion_util.h's match_epilogue).
//   Add(Mul(Act(...), a), b) -> sdx.FusedConv(..., activation, activation_affine [a, b]): after HardSwish or
//      Relu, a Mul by and / or an Add of scalar constants (PP-LCNetV3's learnable affine block, after every
//      HardSwish of PP-OCRv4's detector and recognizer), float32 / float64. With it the convolutions
//      hand their outputs to each other directly, so ConvLayoutOptimizations can keep them blocked.
//   The fused op keeps Conv's attributes. Every fused intermediate value must be read only by
//   the next op of the chain. Float types.
//
// The fused kernel repeats the unfused arithmetic, so results are bitwise the same. Runs last:
// NormalizationFusion folds BatchNormalization into the Conv first, ActivationFusion makes
// Swish/HardSwish/Gelu out of their arithmetic forms.
#include "opt/fusion_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

bool fuse_conv(ir::Graph& g, ir::Node& conv, PassContext& ctx) {
  if (conv.num_inputs() < 2) return false;
  ir::Value* x = conv.input(0);
  const DType dt = elem_type(x);
  auto ws = static_shape(conv.input(1));
  if (!is_float(dt) || elem_type(conv.input(1)) != dt || !ws || ws->size() < 3) return false;
  const int rank = static_cast<int>(ws->size());
  const int64_t m = (*ws)[0];
  const bool has_bias = conv.num_inputs() > 2 && conv.input(2);
  // 16-bit floats: Conv rounds its sum before a separate Add but not before its own bias add.
  const bool exact_bias_fold = dt == DType::kFloat32 || dt == DType::kFloat64;
  Epilogue e = match_epilogue(g, conv, "Conv", !has_bias && exact_bias_fold, rank, 1, m, dt, /*allow_clamp=*/true,
                              /*allow_affine=*/true);
  if (!e.bias && !e.activation) return false;
  if (elem_type(e.last->output(0)) != dt) return false;
  std::vector<ir::Value*> inputs = {x, conv.input(1)};
  if (e.bias)
    inputs.push_back(g.add_constant(conv.name() + "_bias", float_tensor(dt, Shape{m}, *e.bias)));
  else if (has_bias)
    inputs.push_back(conv.input(2));
  std::vector<ir::Attribute> attrs = conv.attributes();
  if (!e.activation) {
    fuse(g, e.chain, e.last, "Conv", "", conv.opset(), inputs, attrs);
    return ctx.applied(conv, "Add(Conv(X, W), b) -> Conv(X, W, b)");
  }
  for (ir::Attribute& a : e.activation->attributes()) attrs.push_back(std::move(a));
  fuse(g, e.chain, e.last, "FusedConv", "sdx", 1, inputs, attrs);
  return ctx.applied(conv, e.what + " -> sdx.FusedConv");
}

class ConvEpilogueFusionOptimizations final : public PatternPass {
 public:
  ConvEpilogueFusionOptimizations() { add_rule({"Conv [+ bias] + activation -> sdx.FusedConv", {"Conv"}, fuse_conv}); }
  const char* name() const override { return "ConvEpilogueFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fuse_conv_epilogue", [] { return std::make_unique<ConvEpilogueFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
