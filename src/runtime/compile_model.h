// compile_model: the compiler half of loading a model, before any runtime state exists: the
// verifier gate, type inference, the graph optimizer and the re-check of what it produced.
//
//   SDX_ASSIGN_OR_RETURN(CompiledModel c, compile_model(model, options.optimizer), "");
#pragma once

#include <map>
#include <string>
#include <utility>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "opt/pass_manager.h"
#include "runtime/row_proof.h"

namespace sdx::runtime {

struct CompiledModel {
  opt::OptimizationReport optimization;  // what the optimizer did (rewrites per pass, op histograms)
  // Initializers a caller may override (Session::set_variable): graph inputs, and constants whose readers
  // the optimizer left exactly as they were (it may have read, folded or merged the others).
  std::unordered_set<const ir::Value*> overridable;
  RowProof rows;  // empty when not proven (prove_rows false)
};

// Verifies, types and optimizes model.graph in place; proves its row dims first when `prove_rows`.
Result<CompiledModel> compile_model(ir::Model& model, const opt::OptimizerOptions& options, bool prove_rows = true);

// Describes nodes with no kernel as one message: "3 unsupported operators: Foo (opset 13) at nodes 'a', 'b'; ...".
std::string describe_unsupported(const std::vector<const ir::Node*>& nodes);

}  // namespace sdx::runtime
