// IdentityFunctionOptimizations (pass 9): removes ops that return their input unchanged:
// Identity, Dropout in inference (no mask output read), a Cast to the input's own type,
// and Reshape/Squeeze/Unsqueeze/Flatten whose input already has the output's static shape.
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

class IdentityFunctionOptimizations final : public PatternPass {
 public:
  IdentityFunctionOptimizations() {
    add_rule({"Identity(x) -> x", {"Identity"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
      if (!n.input(0) || n.input(0)->type().kind != ir::TypeInfo::Kind::kTensor) return false;
      return forward_output(g, &n, n.input(0)) && ctx.applied(n, "Identity(x) -> x");
    }});
    add_rule({"Dropout(x) -> x", {"Dropout"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
      // Inference: training_mode absent or a constant false (opset 12+), or the old is_test attribute.
      if (n.num_inputs() >= 3 && n.input(2)) {
        auto mode = scalar_constant(n.input(2));
        if (!mode || *mode != 0.0) return false;
      }
      return forward_output(g, &n, n.input(0)) && ctx.applied(n, "Dropout(x) -> x (inference)");
    }});
    add_rule({"Cast(x, to=type of x) -> x", {"Cast"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
      const ir::Value* x = n.input(0);
      if (!x || x->type().kind != ir::TypeInfo::Kind::kTensor || x->type().elem == DType::kUndefined) return false;
      if (n.output(0)->type().elem != x->type().elem) return false;
      return forward_output(g, &n, n.input(0)) && ctx.applied(n, "Cast(x) to its own type -> x");
    }});
    add_rule({"Reshape(x) to x's shape -> x", {"Reshape", "Squeeze", "Unsqueeze", "Flatten"},
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                auto in = static_shape(n.input(0));
                auto out = static_shape(n.output(0));
                if (!in || !out || *in != *out) return false;
                return forward_output(g, &n, n.input(0)) && ctx.applied(n, n.op_type() + "(x) to x's own shape -> x");
              }});
  }
  const char* name() const override { return "IdentityFunctionOptimizations"; }
  PassCategory category() const override { return PassCategory::kCleanup; }
};

const PassRegistrar kRegistrar("remove_identities", [] { return std::make_unique<IdentityFunctionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
