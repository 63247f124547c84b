// Both rewrites are exact (the same elements are read, commutative kernels give the same values),
// so the default check_pass tolerance (rtol 1e-5, atol 1e-6) is never approached.
#include "../pass_test_util.h"
#include "ir/type_inference.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"BroadcastEliminationOptimizations"};

TEST(BroadcastEliminationOptimizations, RemovesExpandFeedingBroadcastingOps) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* z = b.input("z", {2, 3});
    ir::Value* bias = b.input("bias", {3});
    ir::Value* e = b.op("Expand", {bias, b.constant("shape", i64({2, 3}, {2}))});
    b.output(b.op("Mul", {x, e}));
    b.output(b.op("Add", {z, e}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 1))},
                            {"z", Datum::tensor(random_f32({2, 3}, 2))},
                            {"bias", Datum::tensor(random_f32({3}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("BroadcastEliminationOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"Mul", 1}}));
}

TEST(BroadcastEliminationOptimizations, KeepsExpandThatChangesTheResultShapeOrFeedsOtherOps) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* bias = b.input("bias", {3});
    // Add(x[2,3], Expand(bias, [4,2,3])) is [4,2,3]; Add(x, bias) would be [2,3].
    ir::Value* e = b.op("Expand", {bias, b.constant("shape", i64({4, 2, 3}, {3}))});
    b.output(b.op("Add", {e, x}));  // (larger operand already first)
    // An Expand also read by Relu (no broadcasting) stays too.
    ir::Value* e2 = b.op("Expand", {bias, b.constant("shape2", i64({2, 3}, {2}))});
    b.output(b.op("Add", {x, e2}));
    b.output(b.op("Relu", {e2}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 4))}, {"bias", Datum::tensor(random_f32({3}, 5))}});
  EXPECT_EQ(r.report.rewrites_of("BroadcastEliminationOptimizations"), 0);
  EXPECT_EQ(r.ops_after.at("Expand"), 2);
}

TEST(BroadcastEliminationOptimizations, PutsConstantsSecondAndLargerOperandsFirst) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* s = b.input("s", {3});
    ir::Value* c = b.constant("c", f32({1, 2, 3}, {3}));
    ir::Value* y = b.op("Add", {c, x});  // -> Add(x, c)
    ir::Value* z = b.op("Mul", {s, y});  // -> Mul(y, s): [2, 3] before [3]
    ir::Value* w = b.op("Sub", {c, z});  // not commutative: stays
    b.output(b.op("Max", {w, c}));       // already canonical: stays
    return b.model();
  };
  PassCheck r =
      check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2, 3}, 6))}, {"s", Datum::tensor(random_f32({3}, 7))}});
  EXPECT_EQ(r.report.rewrites_of("BroadcastEliminationOptimizations"), 2);
  EXPECT_EQ(r.report.iterations, 2);  // the second round swaps nothing back: a fixpoint

  ir::Model m = build();
  ASSERT_TRUE(ir::infer_types(*m.graph).is_ok());
  ASSERT_TRUE(opt::optimize(*m.graph, only(kPass)).is_ok());
  std::map<std::string, std::pair<std::string, std::string>> operands;
  for (const auto& n : m.graph->nodes()) operands[n->op_type()] = {n->input(0)->name(), n->input(1)->name()};
  EXPECT_EQ(operands["Add"], (std::pair<std::string, std::string>{"x", "c"}));
  EXPECT_EQ(operands["Mul"].second, "s");
  EXPECT_EQ(operands["Sub"].first, "c");
  EXPECT_EQ(operands["Max"].second, "c");
}

}  // namespace
}  // namespace sdx::test
