// Compile-time evaluation for the optimizer: runs one node's CPU reference kernel
// on constant inputs, so passes can fold constants (ConstantFunctionOptimizations)
// or combine them (ArithmeticChainOptimizations: Add(Add(x, c1), c2) needs c1 + c2
// with the kernels' own broadcasting and rounding).
//
//   // The outputs of an existing node, from given input values (nullptr = omitted input):
//   SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs, evaluate_node(node, {&a, &b}), "folding");
//   // An op that is not in the graph (a scratch one-node graph):
//   SDX_ASSIGN_OR_RETURN(Tensor sum, evaluate_op("Add", {c1, c2}), "c1 + c2");
//
// The optimizer knows no backend: the runtime supplies the evaluator (register_constant_evaluator, done
// by runtime/cpu_constant_evaluator.cc when libsdx loads), which runs the CPU reference kernels (the
// same ones the conformance suite checks), so a folded value is bitwise what the CPU backend computes at
// run time. Errors are values (a kernel rejecting its inputs is not a pass failure, the caller just
// skips); with no evaluator registered nothing folds.
#pragma once

#include <string>
#include <vector>

#include "core/datum.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace sdx::opt {

// Runs one node on constant inputs (one per node input; nullptr for an omitted one) and returns one
// Datum per node output.
class ConstantEvaluator {
 public:
  virtual ~ConstantEvaluator() = default;
  virtual Result<std::vector<Datum>> evaluate(const ir::Node& n, const std::vector<const Tensor*>& inputs) const = 0;
};

// The evaluator every later evaluate_node uses (it must live for the rest of the process; null: none).
void register_constant_evaluator(const ConstantEvaluator* evaluator);

// Runs n's kernel once on `inputs` (one per node input; nullptr for an omitted one). Nodes with
// subgraphs are refused. Returns one Datum per node output (empty for an omitted output).
Result<std::vector<Datum>> evaluate_node(const ir::Node& n, const std::vector<const Tensor*>& inputs);

// Runs `op` (default domain, given opset) on `inputs` with `attrs`; returns its first output, which
// must be a tensor.
Result<Tensor> evaluate_op(const std::string& op, const std::vector<Tensor>& inputs,
                           std::vector<ir::Attribute> attrs = {}, int opset = 17);

}  // namespace sdx::opt
