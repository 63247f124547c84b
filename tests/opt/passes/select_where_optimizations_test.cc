#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"SelectWhereOptimizations"};

TEST(SelectWhereOptimizations, ConstantConditionPicksTheBranch) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* a = b.input("a", {2, 3});
    ir::Value* c = b.input("c", {3});
    ir::Value* yes = b.op("Where", {b.constant("t", bools({true, true, true}, {3})), b.op("Relu", {a}), c});
    ir::Value* no = b.op("Where", {b.constant("f", bools({false}, {1, 1})), c, b.op("Neg", {a})});
    b.output(b.op("Add", {yes, no}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"a", Datum::tensor(random_f32({2, 3}, 1))}, {"c", Datum::tensor(random_f32({3}, 2))}});
  EXPECT_EQ(r.report.rewrites_of("SelectWhereOptimizations"), 2);
  EXPECT_EQ(r.ops_after.count("Where"), 0u);
}

TEST(SelectWhereOptimizations, SameBranchesGiveThatBranch) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* cond = b.input("cond", {3}, DType::kBool);
    ir::Value* r = b.op("Relu", {x});
    b.output(b.op("Exp", {b.op("Where", {cond, r, r})}));
    return b.model();
  };
  PassCheck r = check_pass(
      kPasses, build,
      {{"x", Datum::tensor(random_f32({2, 3}, 3))}, {"cond", Datum::tensor(bools({true, false, true}, {3}))}});
  EXPECT_EQ(r.report.rewrites_of("SelectWhereOptimizations"), 1);
  EXPECT_EQ(r.ops_after.count("Where"), 0u);
}

TEST(SelectWhereOptimizations, KeepsBroadcastingMixedAndOutputWheres) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* a = b.input("a", {3});
    ir::Value* m = b.input("m", {2, 3});
    // All true, but the result is [2, 3] (broadcast against m), not a's [3].
    ir::Value* widened = b.op("Where", {b.constant("t", bools({true, true, true}, {3})), a, m});
    // The condition broadcasts the result to [2, 3] too.
    ir::Value* cond_wide = b.op("Where", {b.constant("t2", bools({true, true, true, true, true, true}, {2, 3})), a, a});
    // Mixed constant condition.
    ir::Value* mixed = b.op("Where", {b.constant("tf", bools({true, false, true}, {3})), a, a});
    b.output(b.op("Add", {widened, b.op("Add", {cond_wide, mixed})}));
    // Foldable, but its output is a graph output.
    b.output(b.op("Where", {b.constant("t3", bools({true}, {1})), m, m}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"a", Datum::tensor(random_f32({3}, 4))}, {"m", Datum::tensor(random_f32({2, 3}, 5))}});
  // Only the mixed Where(c, a, a) folds: c:[3] broadcasts into a:[3].
  EXPECT_EQ(r.report.rewrites_of("SelectWhereOptimizations"), 1);
  EXPECT_EQ(r.ops_after.at("Where"), 3);
}

}  // namespace
}  // namespace sdx::test
