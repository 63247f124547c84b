// ConvResidualFusionOptimizations (pass 25, a CPU backend pass next to ConvEpilogueFusion): the
// residual Add of a ResNet basic block, and the activation after it, are applied by the
// convolution that produces the Add's other operand, while its output block is in cache, instead
// of in two separate passes over the whole tensor (kernel: backend/cpu/kernels/fused_conv.cc, the
// residual is oneDNN's `sum` post-op there).
//
//   Add(Conv(X, W, B?), R)                  -> sdx.FusedConv(X, W, B?, R)
//   Act(Add(Conv(X, W, B?), R))             -> sdx.FusedConv(X, W, B?, R, activation)
//   Add(sdx.FusedConv(X, W, B?) [no activation, no residual], R) [-> Act] the same
//
//   R: any value of the convolution output's element type and exactly its shape (every dim
//      fixed and equal, or the same named symbol), so the Add does not broadcast; Add operands
//      in either order (float addition commutes bit for bit). When both operands are
//      convolutions (a downsampling shortcut) the first one that qualifies takes the other as R.
//   Act: as ConvEpilogueFusion (fusion_util.h epilogue_activation), the single reader of the Add.
//   The convolution output must be read only by the Add (and not be a graph output); the fused
//   op keeps the convolution's attributes. Float types.
//
// The fused kernel computes act((conv(X, W) + B) + R) with the roundings of the unfused ops, so
// results are bitwise the same. Runs after ConvEpilogueFusion (2400), which has folded the bias
// (BatchNormalization arrives through NormalizationFusion) and fused Conv + activation where no
// residual follows: only a convolution without activation can take a residual, which must be
// added before the activation.
#include "opt/fusion_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Same rank and every dim the same: fixed and equal, or symbolic with the same (non-empty) name.
bool same_shape(const ir::Value* a, const ir::Value* b) {
  const auto& sa = a->type().shape;
  const auto& sb = b->type().shape;
  if (!sa || !sb || sa->size() != sb->size()) return false;
  for (size_t i = 0; i < sa->size(); ++i) {
    const ir::Dim &da = (*sa)[i], &db = (*sb)[i];
    if (da.is_fixed() != db.is_fixed()) return false;
    if (da.is_fixed() ? da.value != db.value : (da.param.empty() || da.param != db.param)) return false;
  }
  return true;
}

// A convolution that can take a residual: Conv, or sdx.FusedConv without activation, residual or
// channel-blocked tensors (ConvLayoutOptimizations runs after this pass).
bool takes_residual(const ir::Node& n) {
  if (n.op_type() == "Conv" && n.domain().empty()) return n.num_inputs() >= 2 && n.num_inputs() <= 3;
  if (n.op_type() == "FusedConv" && n.domain() == "sdx") {
    for (const char* layout : {"input_layout", "output_layout", "residual_layout"})
      if (n.attr_string(layout, "NCHW") != "NCHW") return false;
    return n.num_inputs() <= 3 && n.attr_string("activation", "none") == "none";
  }
  return false;
}

bool fuse_residual(ir::Graph& g, ir::Node& add, PassContext& ctx) {
  if (add.num_inputs() != 2 || add.num_outputs() != 1) return false;
  const DType dt = elem_type(add.output(0));
  if (!is_float(dt)) return false;
  for (int i = 0; i < 2; ++i) {
    ir::Value* y = add.input(i);
    ir::Value* r = add.input(1 - i);
    ir::Node* conv = y ? y->producer() : nullptr;
    if (!conv || !r || y == r || !takes_residual(*conv) || conv->num_outputs() != 1) continue;
    if (only_reader(g, y) != &add || elem_type(y) != dt || elem_type(r) != dt || elem_type(conv->input(0)) != dt)
      continue;
    if (!same_shape(y, r) || !same_shape(y, add.output(0))) continue;
    std::vector<ir::Node*> chain = {conv, &add};
    ir::Node* last = &add;
    std::string what = "Add(" + conv->op_type() + ", R)";
    std::vector<ir::Attribute> attrs;
    for (const ir::Attribute& a : conv->attributes())
      if (a.name != "activation" && a.name != "activation_params") attrs.push_back(a);
    ir::Node* next = only_reader(g, add.output(0));
    if (next && next->num_inputs() >= 1 && next->input(0) == add.output(0) && elem_type(next->output(0)) == dt) {
      if (auto act = epilogue_activation(*next)) {
        for (ir::Attribute& a : act->attributes()) attrs.push_back(std::move(a));
        chain.push_back(next);
        last = next;
        what = next->op_type() + "(" + what + ")";
      }
    }
    ir::Value* bias = conv->num_inputs() > 2 ? conv->input(2) : nullptr;
    fuse(g, chain, last, "FusedConv", "sdx", 1, {conv->input(0), conv->input(1), bias, r}, std::move(attrs));
    return ctx.applied(add, what + " -> sdx.FusedConv(X, W, B, R)");
  }
  return false;
}

class ConvResidualFusionOptimizations final : public PatternPass {
 public:
  ConvResidualFusionOptimizations() {
    add_rule({"Conv + Add(residual) [+ activation] -> sdx.FusedConv", {"Add"}, fuse_residual});
  }
  const char* name() const override { return "ConvResidualFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fuse_conv_residual", [] { return std::make_unique<ConvResidualFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
