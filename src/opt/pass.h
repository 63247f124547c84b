// Pass: one graph optimization (the DSP document's Graph Optimizer passes), one
// per file under src/opt/passes/. Where a pass runs, its category and what it does are its row
// of the pipeline table (pass_table.inc); its file only registers a factory under the row's name.
// The PassManager runs the enabled passes in table order, for up to max_iterations rounds,
// stopping at a fixpoint.
//
//   class FooOptimizations final : public Pass {
//    public:
//     const char* name() const override { return "FooOptimizations"; }  // the row's alias
//     PassCategory category() const override { return PassCategory::kAlgebraic; }
//     Result<int> run(ir::Graph& g, PassContext& ctx) override { ... ctx.applied(node, "Foo(x) -> x"); ... }
//   };
//   const PassRegistrar kRegistrar("simplify_foo", [] { return std::make_unique<FooOptimizations>(); });
//   // pass_table.inc: SDX_PASS(550, simplify_foo, kAlgebraic, FooOptimizations, "Foo(x) -> x")
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

// One rewrite: "simplify_algebra: Add(x, 0) -> x at node 'add_3'" (pass: the table name).
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
  // The DSP name, its table row's alias (checked against the row, as is category()).
  virtual const char* name() const = 0;
  virtual PassCategory category() const = 0;
  // One sweep over the graph; returns the number of rewrites (0 = nothing changed). Removed nodes
  // may stay allocated until the manager collects them (ir::Graph::remove_node).
  virtual Result<int> run(ir::Graph& graph, PassContext& ctx) = 0;
};

using PassFactory = std::function<std::unique_ptr<Pass>()>;

// One row of pass_table.inc with the factory registered under its name.
struct PassInfo {
  int order;
  std::string name;   // what the pass does: "fold_constants"
  std::string alias;  // the DSP name: "ConstantFunctionOptimizations"
  PassCategory category;
  std::string summary;
  PassFactory create;
};

// Registers the factory of the pass whose table row is `name`, at static-initialization time.
class PassRegistrar {
 public:
  PassRegistrar(const char* name, PassFactory create);
};

// Every table row that has a registered pass, in pipeline order (built on the first call, once
// static initialization has registered every pass).
const std::vector<PassInfo>& registered_passes();

// The registered pass called `name_or_alias` (either spelling); null when none is.
const PassInfo* find_pass(const std::string& name_or_alias);

// Where the table and the registered passes disagree: a row no pass file registered (a file not
// linked), a registration naming no row or registering twice, a pass whose name()/category() differ
// from its row's alias/category. Empty when they agree; optimize() fails with these.
const std::vector<std::string>& pass_table_problems();

}  // namespace sdx::opt
