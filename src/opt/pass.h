// Pass: one graph optimization (the DSP document's Graph Optimizer passes), one
// per file under src/opt/passes/. A pass registers itself with its place in the
// pipeline; the PassManager runs the enabled ones in that order, for up to
// max_iterations rounds, stopping at a fixpoint.
//
//   class FooOptimizations final : public Pass {
//    public:
//     const char* name() const override { return "FooOptimizations"; }
//     PassCategory category() const override { return PassCategory::kAlgebraic; }
//     Result<int> run(ir::Graph& g, PassContext& ctx) override { ... ctx.applied(node, "Foo(x) -> x"); ... }
//   };
//   const PassRegistrar kFoo(/*order=*/500, [] { return std::make_unique<FooOptimizations>(); });
//
// Local rewrites are easier as a PatternPass (pattern_pass.h): rules keyed by anchor op type.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "opt/optimizer_options.h"

namespace sdx::opt {

enum class PassCategory { kCleanup, kConstant, kAlgebraic, kLayout, kFusion, kPrecision };
const char* pass_category_name(PassCategory c);

// One rewrite: "AlgebraicOptimizations: Add(x, 0) -> x at node 'add_3'".
struct Rewrite {
  std::string pass;
  std::string what;  // "before -> after"
  std::string node;  // the anchor node's name
};

class PassContext {
 public:
  PassContext(const OptimizerOptions& options, const std::string& pass, std::vector<Rewrite>* log)
      : options_(options), pass_(pass), log_(log) {}
  const OptimizerOptions& options() const { return options_; }
  // Records one rewrite (and prints it when log_applied is on). Returns true, for `return ctx.applied(...)`.
  bool applied(const ir::Node& anchor, const std::string& what);
  // The same for a rewrite anchored on a value rather than a node.
  bool applied_value(const std::string& value, const std::string& what);
  int count() const { return count_; }

 private:
  const OptimizerOptions& options_;
  std::string pass_;
  std::vector<Rewrite>* log_;
  int count_ = 0;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const char* name() const = 0;
  virtual PassCategory category() const = 0;
  // One sweep over the graph; returns the number of rewrites (0 = nothing changed). Removed nodes
  // may stay allocated until the manager collects them (ir::Graph::remove_node).
  virtual Result<int> run(ir::Graph& graph, PassContext& ctx) = 0;
};

using PassFactory = std::function<std::unique_ptr<Pass>()>;

struct PassInfo {
  int order;
  std::string name;
  PassCategory category;
  PassFactory create;
};

// Registers a pass at static-initialization time; `order` places it in the pipeline (see the
// README's pass table; lower runs first).
class PassRegistrar {
 public:
  PassRegistrar(int order, PassFactory create);
};

// Every registered pass, in pipeline order.
const std::vector<PassInfo>& registered_passes();

}  // namespace sdx::opt
