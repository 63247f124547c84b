// The optimizer's user controls: enabled, skip, log_applied, max_iterations (fields and SDX_OPTIMIZER_*).
#include "opt/pass_manager.h"

#include <cstdlib>

#include "pass_test_util.h"
#include "runtime/session_options.h"

namespace sdx::test {
namespace {

// x -> Identity -> Identity -> Relu -> y, plus a dead Neg.
ir::Model identities() {
  ModelBuilder b;
  ir::Value* x = b.input("x", {4});
  (void)b.op("Neg", {x});
  b.output(b.op("Relu", {b.op("Identity", {b.op("Identity", {x})})}));
  return b.model();
}

TEST(PassManager, DisabledRunsNothing) {
  ir::Model m = identities();
  opt::OptimizerOptions o;
  o.enabled = false;
  auto rep = opt::optimize(*m.graph, o);
  ASSERT_TRUE(rep.is_ok());
  EXPECT_FALSE(rep->enabled);
  EXPECT_EQ(rep->total_rewrites(), 0);
  EXPECT_EQ(rep->iterations, 0);
  EXPECT_EQ(m.graph->nodes().size(), 4u);
}

TEST(PassManager, SkippedPassesDoNoWorkAndAreReported) {
  // By table name, and by the DSP alias that skip lists written before the table still use.
  for (const char* spelling : {"remove_identities", "IdentityFunctionOptimizations"}) {
    ir::Model m = identities();
    opt::OptimizerOptions o;
    o.skip = {spelling};
    auto rep = opt::optimize(*m.graph, o);
    ASSERT_TRUE(rep.is_ok()) << spelling;
    EXPECT_EQ(rep->rewrites_of("remove_identities"), 0) << spelling;
    EXPECT_EQ(rep->ops_after.at("Identity"), 2) << spelling;
    EXPECT_EQ(rep->rewrites_of("eliminate_dead_nodes"), 1) << spelling;  // the dead Neg still goes
    EXPECT_EQ(rep->skipped, (std::vector<std::string>{"remove_identities"})) << spelling;
  }
}

TEST(PassManager, ReportsUseTableNamesAndFindAliasesToo) {
  ir::Model m = identities();
  auto rep = opt::optimize(*m.graph, opt::OptimizerOptions{});
  ASSERT_TRUE(rep.is_ok());
  std::vector<std::string> keys, names;
  for (const auto& [pass, n] : rep->rewrites_per_pass) keys.push_back(pass);
  for (const opt::PassInfo& p : opt::registered_passes()) names.push_back(p.name);
  EXPECT_EQ(keys, names);
  EXPECT_EQ(rep->rewrites_of("remove_identities"), 2);
  EXPECT_EQ(rep->rewrites_of("IdentityFunctionOptimizations"), 2);
  EXPECT_EQ(rep->rewrites_of("no_such_pass"), 0);
  for (const opt::Rewrite& w : rep->log) EXPECT_NE(opt::find_pass(w.pass), nullptr) << w.pass;
  EXPECT_EQ(rep->log.front().pass, "eliminate_dead_nodes");  // the dead Neg, first in the pipeline
}

TEST(PassManager, LogAppliedPrintsExactlyTheRewritesPerformed) {
  ir::Model m = identities();
  opt::OptimizerOptions o;
  o.log_applied = true;
  o.verify_each_pass = true;
  ::testing::internal::CaptureStderr();
  auto rep = opt::optimize(*m.graph, o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(rep.is_ok());
  ASSERT_EQ(static_cast<int>(rep->log.size()), rep->total_rewrites());
  std::string expected;
  for (const opt::Rewrite& w : rep->log)
    expected += "sdx optimizer: " + w.pass + ": " + w.what + " (node '" + w.node + "')\n";
  EXPECT_EQ(err, expected);
  EXPECT_NE(err.find("remove_identities: Identity(x) -> x"), std::string::npos);
  EXPECT_EQ(rep->ops_after, (std::map<std::string, int>{{"Relu", 1}}));
}

TEST(PassManager, StopsAtAFixpointOrAfterMaxIterations) {
  ir::Model m = identities();
  opt::OptimizerOptions o;
  auto rep = opt::optimize(*m.graph, o);
  ASSERT_TRUE(rep.is_ok());
  EXPECT_LT(rep->iterations, o.max_iterations + 1);
  EXPECT_GE(rep->iterations, 2);  // one round that changes something, one that finds nothing

  ir::Model once = identities();
  o.max_iterations = 1;
  rep = opt::optimize(*once.graph, o);
  ASSERT_TRUE(rep.is_ok());
  EXPECT_EQ(rep->iterations, 1);
}

TEST(PassManager, EnvironmentOverlaysTheOptions) {
  setenv("SDX_OPTIMIZER_ENABLED", "0", 1);
  setenv("SDX_OPTIMIZER_SKIP", "AlgebraicOptimizations, PeepholeOptimizations", 1);
  setenv("SDX_OPTIMIZER_LOG_APPLIED", "1", 1);
  setenv("SDX_OPTIMIZER_MAX_ITERATIONS", "5", 1);
  setenv("SDX_OPTIMIZER_FP16", "true", 1);
  setenv("SDX_OPTIMIZER_INT8", "1", 1);
  // The variables are rows of src/runtime/session_options.inc, read with every other session option.
  opt::OptimizerOptions o = runtime::SessionOptions::from_env({})->optimizer;
  unsetenv("SDX_OPTIMIZER_ENABLED");
  unsetenv("SDX_OPTIMIZER_SKIP");
  unsetenv("SDX_OPTIMIZER_LOG_APPLIED");
  unsetenv("SDX_OPTIMIZER_MAX_ITERATIONS");
  unsetenv("SDX_OPTIMIZER_FP16");
  unsetenv("SDX_OPTIMIZER_INT8");
  EXPECT_FALSE(o.enabled);
  EXPECT_EQ(o.skip, (std::vector<std::string>{"AlgebraicOptimizations", "PeepholeOptimizations"}));
  EXPECT_TRUE(o.log_applied);
  EXPECT_EQ(o.max_iterations, 5);
  EXPECT_TRUE(o.fp16);
  EXPECT_TRUE(o.int8);
  EXPECT_FALSE(o.int8_dynamic);
  setenv("SDX_OPTIMIZER_INT8", "dynamic", 1);  // int8 weights and X quantized per row at run time
  opt::OptimizerOptions d = runtime::SessionOptions::from_env({})->optimizer;
  unsetenv("SDX_OPTIMIZER_INT8");
  EXPECT_TRUE(d.int8);
  EXPECT_TRUE(d.int8_dynamic);
}

TEST(PassManager, PassesAreRegisteredInPipelineOrder) {
  const auto& passes = opt::registered_passes();
  ASSERT_GE(passes.size(), 2u);
  for (size_t i = 1; i < passes.size(); ++i) EXPECT_LT(passes[i - 1].order, passes[i].order) << passes[i].name;
  EXPECT_EQ(passes.front().name, "eliminate_dead_nodes");
  EXPECT_EQ(passes.front().alias, "UnusedFunctionOptimizations");
}

// Every row of pass_table.inc has its pass file's factory, and each pass is the class its row's
// alias names, in its row's category.
TEST(PassManager, TableAndRegisteredPassesAgree) {
  EXPECT_EQ(opt::pass_table_problems(), std::vector<std::string>{});
  const auto& passes = opt::registered_passes();
  EXPECT_EQ(passes.size(), 29u);
  for (const opt::PassInfo& p : passes) {
    std::unique_ptr<opt::Pass> pass = p.create();
    EXPECT_EQ(pass->name(), p.alias);
    EXPECT_EQ(pass->category(), p.category) << p.name;
    EXPECT_FALSE(p.summary.empty()) << p.name;
    EXPECT_EQ(p.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string::npos) << p.name;
    EXPECT_EQ(opt::find_pass(p.name), &p);
    EXPECT_EQ(opt::find_pass(p.alias), &p);
  }
  EXPECT_EQ(opt::find_pass("fold_constants")->alias, "ConstantFunctionOptimizations");
  EXPECT_EQ(opt::find_pass("AttentionFusionOptimizations")->name, "fuse_attention");
  EXPECT_EQ(opt::find_pass("no_such_pass"), nullptr);
}

}  // namespace
}  // namespace sdx::test
