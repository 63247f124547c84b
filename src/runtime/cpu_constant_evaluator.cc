// The optimizer's constant evaluator (opt/constant_eval.h): one node run on the CPU backend's reference
// kernel with freshly allocated outputs. Registered when libsdx loads, so every optimize() call folds
// with the kernels the CPU backend runs.
#include "backend/kernel_registry.h"
#include "opt/constant_eval.h"

namespace sdx::runtime {
namespace {

// A KernelContext over given input tensors whose outputs are freshly allocated. Subgraphs never run
// here (nodes with subgraphs are refused before a kernel is created).
class FoldContext final : public backend::KernelContext {
 public:
  FoldContext(const ir::Node& node, std::vector<Datum> inputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(static_cast<size_t>(node.num_outputs())) {}

  const ir::Node& node() const override { return node_; }
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const override {
    return i >= 0 && i < num_inputs() && !inputs_[static_cast<size_t>(i)].is_empty();
  }
  const Tensor& input(int i) const override { return input_datum(i).as_tensor(); }
  const Datum& input_datum(int i) const override {
    static const Datum kEmpty;
    return has_input(i) ? inputs_[static_cast<size_t>(i)] : kEmpty;
  }
  int num_outputs() const override { return node_.num_outputs(); }
  bool wants_output(int i) const override { return node_.output(i) != nullptr; }
  Result<Tensor> allocate_output(int i, DType dtype, const Shape& shape) override {
    SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape), where() + " output " + std::to_string(i));
    SDX_RETURN_IF_ERROR(set_output(i, t), "");
    return t;
  }
  Status set_output(int i, Tensor t) override { return set_output_datum(i, Datum::tensor(std::move(t))); }
  Status set_output_datum(int i, Datum d) override {
    if (i < 0) return internal_error(where() + ": kernel wrote output " + std::to_string(i));
    if (i < num_outputs()) outputs_[static_cast<size_t>(i)] = std::move(d);  // trailing omitted outputs: dropped
    return Status::ok();
  }
  Result<std::vector<Datum>> run_subgraph(const ir::Graph& graph, std::vector<Datum> inputs) override {
    return internal_error(where() + ": no subgraph runs during constant folding");
  }
  std::vector<Datum> take_outputs() { return std::move(outputs_); }

 private:
  const ir::Node& node_;
  std::vector<Datum> inputs_;
  std::vector<Datum> outputs_;
};

class CpuConstantEvaluator final : public opt::ConstantEvaluator {
 public:
  Result<std::vector<Datum>> evaluate(const ir::Node& n, const std::vector<const Tensor*>& inputs) const override {
    const backend::KernelDef* def = backend::KernelRegistry::cpu().find(n);
    if (!def) return unimplemented(n.describe() + " has no CPU kernel");
    SDX_ASSIGN_OR_RETURN(std::unique_ptr<backend::Kernel> kernel, def->create(n), "");
    std::vector<Datum> in;
    in.reserve(inputs.size());
    for (const Tensor* t : inputs) in.push_back(t ? Datum::tensor(*t) : Datum());
    FoldContext ctx(n, std::move(in));
    SDX_RETURN_IF_ERROR(kernel->run(ctx), n.describe());
    return ctx.take_outputs();
  }
};

const bool kRegistered = [] {
  static const CpuConstantEvaluator evaluator;
  opt::register_constant_evaluator(&evaluator);
  return true;
}();

}  // namespace
}  // namespace sdx::runtime
