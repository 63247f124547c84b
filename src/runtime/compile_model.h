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

namespace sdx::runtime {

struct CompiledModel {
  opt::OptimizationReport optimization;  // what the optimizer did (rewrites per pass, op histograms)
  // Initializers a caller may override (Session::set_variable): graph inputs, and constants whose readers
  // the optimizer left exactly as they were (it may have read, folded or merged the others).
  std::unordered_set<const ir::Value*> overridable;
  // Per symbolic input dim: "" when padding it is exact (rows independent), else why not; proven on the graph
  // as loaded, before the optimizer (analysis/row_padding.h).
  std::map<std::string, std::string> row_dims;
  // Per proven dim: graph outputs that carry it where their declared shape has a placeholder (output, axis).
  std::map<std::string, std::vector<std::pair<std::string, int>>> row_output_axes;
};

// Verifies, types and optimizes model.graph in place.
Result<CompiledModel> compile_model(ir::Model& model, const opt::OptimizerOptions& options);

// Describes nodes with no kernel as one message: "3 unsupported operators: Foo (opset 13) at nodes 'a', 'b'; ...".
std::string describe_unsupported(const std::vector<const ir::Node*>& nodes);

}  // namespace sdx::runtime
