// If: runs then_branch or else_branch (subgraphs with no inputs) on a scalar condition.
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

class IfKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* t = node.attr("then_branch");
    const ir::Attribute* e = node.attr("else_branch");
    if (!t || !t->g || !e || !e->g) return invalid_argument("If needs graph attributes then_branch and else_branch");
    then_ = t->g.get();
    else_ = e->g.get();
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    if (c.numel() != 1 || (c.dtype() != DType::kBool))
      return invalid_argument("condition must be a single bool, got " + c.type_string());
    const ir::Graph* branch = *c.data<uint8_t>() ? then_ : else_;
    SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs, ctx.run_subgraph(*branch, {}), "");
    if (static_cast<int>(outs.size()) != ctx.num_outputs())
      return invalid_argument("branch '" + branch->name() + "' produced " + std::to_string(outs.size()) +
                              " outputs but the node has " + std::to_string(ctx.num_outputs()));
    for (size_t i = 0; i < outs.size(); ++i) SDX_RETURN_IF_ERROR(ctx.set_output_datum(static_cast<int>(i), std::move(outs[i])), "");
    return Status::ok();
  }

 private:
  const ir::Graph* then_ = nullptr;
  const ir::Graph* else_ = nullptr;
};

const backend::KernelRegistrar kIf({"If", "", 1, backend::kAnyOpset, backend::kernel_factory<IfKernel>()});

}  // namespace
}  // namespace sdx::cpu
