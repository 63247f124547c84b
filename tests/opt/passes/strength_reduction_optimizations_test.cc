// Pow(x, 2) -> x * x is bitwise exact (checked with zero tolerance). Sqrt/Reciprocal agree with
// pow(x, 0.5)/pow(x, -1) to 1 ulp and x * (1/c) with x / c to 1.5 ulp: checked with rtol 1e-6.
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"StrengthReductionOptimizations"};

TEST(StrengthReductionOptimizations, SquareIsBitwiseExact) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {64});
    b.output(b.op("Pow", {x, b.constant("two", f32({2}, {}))}));  // a graph output: Mul takes it over
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({64}, 1, -1e3f, 1e3f))}}, 0.0, 0.0);
  EXPECT_EQ(r.report.rewrites_of("StrengthReductionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Mul", 1}}));
}

TEST(StrengthReductionOptimizations, ReducesPowersAndDivisionByConstants) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* y1 = b.op("Pow", {x, b.constant("half", f32({0.5f}, {1}))});      // -> Sqrt(x)
    ir::Value* y2 = b.op("Pow", {x, b.constant("minus_one", i64({-1}, {}))});    // -> Reciprocal(x)
    ir::Value* y3 = b.op("Div", {x, b.constant("c", f32({3, 0.1f, -7}, {3}))});  // -> Mul(x, 1/c)
    b.output(b.op("Sum", {y1, y2, y3}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2, 3}, 2, 0.25f, 4.f))}}, 1e-6, 0.0);
  EXPECT_EQ(r.report.rewrites_of("StrengthReductionOptimizations"), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Mul", 1}, {"Reciprocal", 1}, {"Sqrt", 1}, {"Sum", 1}}));
}

TEST(StrengthReductionOptimizations, KeepsDivisionsWithoutASafeReciprocal) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* i = b.input("i", {3}, DType::kInt32);
    ir::Value* y = b.input("y", {3});
    ir::Value* d1 = b.op("Min", {b.op("Div", {x, b.constant("with_zero", f32({2, 0, 4}, {3}))}),  // 1/0 is inf
                                 b.constant("cap", f32({1e30f}, {}))});
    ir::Value* d2 = b.op("Div", {x, b.constant("huge", f32({3e38f}, {}))});  // 1/c is subnormal
    ir::Value* d3 = b.op("Div", {x, y});                                     // not constant
    ir::Value* p3 = b.op("Pow", {x, b.constant("three", f32({3}, {}))});     // not reduced
    b.output(b.op("Sum", {d1, d2, d3, p3}));
    b.output(b.op("Div", {i, b.constant("ci", i32({2}, {}))}));  // integer division
    return b.model();
  };
  PassCheck r = check_pass(kPass, build,
                           {{"x", Datum::tensor(random_f32({3}, 3, 0.5f, 2.f))},
                            {"i", Datum::tensor(i32({7, -7, 3}, {3}))},
                            {"y", Datum::tensor(random_f32({3}, 4, 0.5f, 2.f))}});
  EXPECT_EQ(r.report.rewrites_of("StrengthReductionOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
