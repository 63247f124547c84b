// Float chains are reassociated, so results differ by rounding: a few ulps of the largest
// intermediate. With |x|, |c| <= 4 that is below 1e-5 absolute: checked with rtol 1e-5, atol 1e-5.
// Integer chains are exact (wrapping arithmetic) and compared bitwise.
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"ArithmeticChainOptimizations"};

TEST(ArithmeticChainOptimizations, FoldsAddSubAndMulChainsOfConstants) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* y =
        b.op("Add", {b.op("Add", {x, b.constant("c1", f32({1, 2, 3}, {3}))}), b.constant("c2", f32({0.5f}, {}))});
    y = b.op("Sub", {b.op("Add", {b.constant("c3", f32({1}, {1})), y}), b.constant("c4", f32({2, 3}, {2, 1}))});
    y = b.op("Sub", {b.op("Sub", {y, b.constant("c5", f32({0.25f}, {}))}), b.constant("c6", f32({0.5f}, {}))});
    y = b.op("Mul", {b.constant("c7", f32({2}, {})), b.op("Mul", {y, b.constant("c8", f32({3, 1, 2}, {3}))})});
    b.output(y);
    ir::Value* z = b.input("z", {2, 3});
    b.output(b.op("Add", {b.op("Mul", {z, b.constant("c9", f32({1.5f}, {}))}),
                          b.op("Mul", {b.constant("c10", f32({2, 3, 4}, {3})), z})}));
    b.output(b.op(
        "Sub", {b.op("Mul", {z, b.constant("c11", f32({4}, {}))}), b.op("Mul", {z, b.constant("c12", f32({1}, {}))})}));
    return b.model();
  };
  PassCheck r = check_pass(
      kPass, build,
      {{"x", Datum::tensor(random_f32({2, 3}, 1, -4.f, 4.f))}, {"z", Datum::tensor(random_f32({2, 3}, 2, -4.f, 4.f))}},
      1e-5, 1e-5);
  // The Add/Sub chain folds link by link in one sweep (each folded node is the next link's inner
  // one): 5 rewrites leave one Add. Then Mul(Mul) and the two distributive forms.
  EXPECT_EQ(r.report.rewrites_of("ArithmeticChainOptimizations"), 8);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"Mul", 3}}));
}

TEST(ArithmeticChainOptimizations, IntegerChainsAreExact) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4}, DType::kInt32);
    ir::Value* y =
        b.op("Add", {b.op("Add", {x, b.constant("c1", i32({2147483647}, {}))}), b.constant("c2", i32({5}, {}))});
    b.output(b.op("Mul", {b.op("Mul", {y, b.constant("c3", i32({65536}, {}))}), b.constant("c4", i32({65536}, {}))}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(i32({-7, 0, 3, 2147483647}, {4}))}});
  EXPECT_EQ(r.report.rewrites_of("ArithmeticChainOptimizations"), 2);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"Mul", 1}}));
}

TEST(ArithmeticChainOptimizations, KeepsChainsWhoseInnerResultIsReadElsewhere) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* inner = b.op("Add", {x, b.constant("c1", f32({1}, {}))});
    b.output(b.op("Add", {inner, b.constant("c2", f32({2}, {}))}));
    b.output(b.op("Relu", {inner}));
    // c - x is not x + c: Sub with the constant first is not a chain link.
    b.output(b.op("Sub", {b.constant("c3", f32({1}, {})), b.op("Add", {x, b.constant("c4", f32({2}, {}))})}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({3}, 3))}}, 1e-5, 1e-5);
  EXPECT_EQ(r.report.rewrites_of("ArithmeticChainOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
