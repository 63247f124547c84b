#include "opt/constant_eval.h"

#include <atomic>

namespace sdx::opt {
namespace {

// Published once by the runtime at load (release); read by the passes (acquire) so the evaluator's
// construction happens-before its use.
std::atomic<const ConstantEvaluator*> g_evaluator{nullptr};

}  // namespace

void register_constant_evaluator(const ConstantEvaluator* evaluator) { g_evaluator.store(evaluator, std::memory_order_release); }

Result<std::vector<Datum>> evaluate_node(const ir::Node& n, const std::vector<const Tensor*>& inputs) {
  if (!n.subgraphs().empty()) return invalid_argument(n.describe() + " has subgraphs");
  const ConstantEvaluator* e = g_evaluator.load(std::memory_order_acquire);
  if (!e) return unimplemented("no constant evaluator is registered (the runtime supplies one)");
  return e->evaluate(n, inputs);
}

Result<Tensor> evaluate_op(const std::string& op, const std::vector<Tensor>& inputs, std::vector<ir::Attribute> attrs,
                           int opset) {
  ir::Graph scratch("constant_eval");
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(scratch.add_initializer("in" + std::to_string(i), inputs[i]));
  ir::Node* n = scratch.add_node(op, "", op, ins, {"out"});
  n->set_opset(opset);
  for (ir::Attribute& a : attrs) n->add_attribute(std::move(a));
  std::vector<const Tensor*> values;
  for (const Tensor& t : inputs) values.push_back(&t);
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs, evaluate_node(*n, values), "");
  if (outs.empty() || !outs[0].is_tensor()) return internal_error(op + " produced no tensor");
  return outs[0].as_tensor();
}

}  // namespace sdx::opt
