// PassManager: runs the registered passes (opt/pass.h) over a graph in the order of
// the pipeline table (opt/pass_table.inc), for up to OptimizerOptions::max_iterations
// rounds, stopping early when a round changes nothing (a fixpoint). Skipped passes
// (SDX_OPTIMIZER_SKIP, by table name or DSP alias) never run; with the optimizer
// disabled nothing runs. Reports and logs name passes by their table names. After
// every pass the graph is compacted and re-sorted topologically; in tests the verifier
// runs after every pass too (verify_each_pass), naming the pass that broke the graph.
//
//   SDX_ASSIGN_OR_RETURN(opt::OptimizationReport rep, opt::optimize(*model.graph, options.optimizer), "optimizer");
//   for (auto& [pass, n] : rep.rewrites_per_pass) ...
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "opt/pass.h"

namespace sdx::opt {

struct OptimizationReport {
  bool enabled = false;
  bool preoptimized = false;  // not run because the graph came optimized (a bundle, the disk plan cache)
  int iterations = 0;  // rounds run (the last one changed nothing unless max_iterations was hit)
  std::vector<std::pair<std::string, int>> rewrites_per_pass;  // table name -> count, pipeline order, all rounds
  std::vector<std::string> skipped;                            // table names of the passes `skip` named
  std::vector<Rewrite> log;                                    // every rewrite, in order
  std::map<std::string, int> ops_before, ops_after;            // op histograms ("Add", "sdx.Linear")
  int nodes_before = 0, nodes_after = 0;
  double millis = 0;

  int total_rewrites() const;
  int rewrites_of(const std::string& pass) const;  // by table name or DSP alias
};

Result<OptimizationReport> optimize(ir::Graph& graph, const OptimizerOptions& options);

// A multi-line summary for `sdx inspect --optimized`.
std::string format_report(const OptimizationReport& report);

}  // namespace sdx::opt
