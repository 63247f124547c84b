// Subgraph bodies as plans of their own. The SubgraphCompiler a Session hands its GraphExecutor when
// SessionOptions::subgraph_plans is on: each If branch, Loop body and Scan body is lifted out of its
// graph (ir/lift_subgraph.h: outer-scope reads become inputs, outer constants initializers) and becomes a
// Session of its own with the parent's options, so it goes through the whole compiler (the optimizer
// folds what the outer constants make constant) and the plan lifecycle (warmup, frozen memory, capture,
// replay), once per call of an If or once per iteration of a Loop/Scan. A body session runs on the
// caller's intra-op pool and has no JIT of its own.
//
// A body stays interpreted (GraphExecutor's sub-executor) when it cannot be lifted or compiled, and goes
// back to it when its input shapes change on most calls (a loop whose carried value grows): each new
// shape would cost a warmup and a capture. Both are recorded: interpreted() lists them with why, the
// diagnostics (FALLBACK, SUBGRAPH_INTERPRETED) say so when enabled, and reporters() give each body's
// BodyReport (runtime/body_report.h: plan or interpreted, calls, replays) for Session::body_reports().
//
//   BodySessionCompiler bodies(model, options);
//   SDX_RETURN_IF_ERROR(graph_executor.prepare(*model.graph, &unsupported, {}, &bodies), "");
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "runtime/body_report.h"
#include "runtime/graph_executor.h"
#include "runtime/session_options.h"

namespace sdx::runtime {

class BodySessionCompiler final : public SubgraphCompiler {
 public:
  // parent: the model whose graph's subgraphs are compiled (its opsets and metadata go to each body).
  // loops: the parent's loop monitor, which the bodies' nested loops report to.
  BodySessionCompiler(const ir::Model& parent, const SessionOptions& options,
                      std::shared_ptr<analysis::LoopMonitor> loops)
      : parent_(parent), options_(options), loops_(std::move(loops)) {}

  std::unique_ptr<SubgraphBody> compile(const ir::Graph& body, const ir::Node& owner) override;

  // Outer-scope initializers some compiled body copied in as constants: overriding them
  // (Session::set_variable) would not reach the body.
  const std::unordered_set<const ir::Value*>& captured_constants() const { return constants_; }
  // One line per body left interpreted at load, with why.
  const std::vector<std::string>& interpreted() const { return interpreted_; }
  // One per body compile() saw, in that order: its report now. A compiled body's reporter reads the body,
  // which the GraphExecutor that received it owns: call it only while that executor lives.
  const std::vector<std::function<BodyReport()>>& reporters() const { return reporters_; }

 private:
  const ir::Model& parent_;
  const SessionOptions& options_;
  std::shared_ptr<analysis::LoopMonitor> loops_;
  std::unordered_set<const ir::Value*> constants_;
  std::vector<std::string> interpreted_;
  std::vector<std::function<BodyReport()>> reporters_;
};

}  // namespace sdx::runtime
