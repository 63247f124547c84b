#include "../pass_test_util.h"

namespace sdx::test {
namespace {

TEST(UnusedFunctionOptimizations, RemovesDeadBranchesInOneSweep) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* dead = b.op("Exp", {b.op("Neg", {b.op("Abs", {x})})});  // three nodes nobody reads
    (void)dead;
    b.output(b.op("Relu", {x}));
    return b.model();
  };
  PassCheck r = check_pass({"UnusedFunctionOptimizations"}, build, {{"x", Datum::tensor(random_f32({3}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("UnusedFunctionOptimizations"), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Relu", 1}}));
  EXPECT_EQ(r.report.iterations, 2);  // the second round finds nothing: a fixpoint
}

TEST(UnusedFunctionOptimizations, FreesInitializersNothingReads) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* w = b.constant("w", random_f32({3}, 7));
    (void)b.op("Mul", {x, w});  // dead: its only reader of w goes
    b.output(b.op("Relu", {x}));
    return b.model();
  };
  PassCheck r = check_pass({"UnusedFunctionOptimizations"}, build, {{"x", Datum::tensor(random_f32({3}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("UnusedFunctionOptimizations"), 2);  // the Mul, then w's 12 bytes
  bool freed = false;
  for (const auto& w : r.report.log) freed |= w.what == "unused initializer 'w' (float[3]) -> freed";
  EXPECT_TRUE(freed);
}

}  // namespace
}  // namespace sdx::test
