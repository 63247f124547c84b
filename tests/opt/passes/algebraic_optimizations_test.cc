// The identities x + 0, x - 0, x * 1, x / 1, pow(x, 1), -(a - b) = b - a and sqrt(x * x) = |x| are
// exact for these inputs (no overflow); pow(x, 0.5) vs sqrt(x) may differ by 1 ulp, well inside the
// default check_pass tolerance (rtol 1e-5, atol 1e-6).
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"AlgebraicOptimizations"};

TEST(AlgebraicOptimizations, RemovesNeutralConstants) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* y = b.op("Add", {x, b.constant("zero", f32({0}, {}))});
    y = b.op("Add", {b.constant("zeros", f32({0, 0, 0}, {1, 3})), y});
    y = b.op("Sub", {y, b.constant("zero2", f32({0}, {1}))});
    y = b.op("Mul", {y, b.constant("one", f32({1, 1, 1}, {3}))});
    y = b.op("Mul", {b.constant("one_i", i64({1}, {})), b.op("Cast", {y}, {attr_i("to", 7)})});  // int64 too
    y = b.op("Div", {y, b.constant("one_i2", i64({1, 1}, {2, 1}))});
    y = b.op("Pow", {b.op("Cast", {y}, {attr_i("to", 1)}), b.constant("one_e", i64({1}, {}))});
    b.output(b.op("Relu", {y}));
    return b.model();
  };
  Tensor x = random_f32({2, 3}, 1, -10.f, 10.f);
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(x)}});
  EXPECT_EQ(r.report.rewrites_of("AlgebraicOptimizations"), 7);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Cast", 2}, {"Relu", 1}}));
}

TEST(AlgebraicOptimizations, SqrtOfSquareSqrtPowerAndNegatedSub) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* p = b.input("p", {2, 3});
    ir::Value* a = b.input("a", {3});
    ir::Value* s1 = b.op("Sqrt", {b.op("Mul", {x, x})});                                 // -> Abs(x)
    ir::Value* s2 = b.op("Sqrt", {b.op("Pow", {x, b.constant("two", f32({2}, {}))})});   // -> Abs(x)
    ir::Value* s3 = b.op("Pow", {p, b.constant("half", f32({0.5f, 0.5f, 0.5f}, {3}))});  // -> Sqrt(p)
    ir::Value* s4 = b.op("Neg", {b.op("Sub", {x, a})});                                  // -> Sub(a, x)
    b.output(b.op("Sum", {s1, s2, s3, s4}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 2, -3.f, 3.f))},
                            {"p", Datum::tensor(random_f32({2, 3}, 3, 0.f, 4.f))},
                            {"a", Datum::tensor(random_f32({3}, 4))}});
  EXPECT_EQ(r.report.rewrites_of("AlgebraicOptimizations"), 4);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Abs", 2}, {"Sqrt", 1}, {"Sub", 1}, {"Sum", 1}}));
}

TEST(AlgebraicOptimizations, KeepsConstantsThatChangeShapeOrValues) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* y1 = b.op("Add", {x, b.constant("zeros", f32({0, 0, 0, 0, 0, 0}, {2, 3}))});  // [2, 3], not x
    ir::Value* y2 = b.op("Mul", {x, b.constant("zero", f32({0}, {}))});                      // NaN * 0 is NaN
    ir::Value* y3 = b.op("Add", {x, b.constant("mixed", f32({0, 1, 0}, {3}))});              // not all 0
    ir::Value* y4 = b.op("Sub", {b.constant("zero2", f32({0}, {})), x});                     // 0 - x is -x
    ir::Value* y5 = b.op("Div", {b.constant("one", f32({1}, {})), x});                       // 1 / x
    b.output(b.op("Relu", {y1}));
    b.output(b.op("Sum", {y2, y3, y4, y5}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({3}, 5, 0.5f, 2.f))}});
  EXPECT_EQ(r.report.rewrites_of("AlgebraicOptimizations"), 0);
}

TEST(AlgebraicOptimizations, KeepsNegOfASubThatIsReadElsewhere) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* a = b.input("a", {3});
    ir::Value* c = b.input("c", {3});
    ir::Value* d = b.op("Sub", {a, c});
    b.output(b.op("Neg", {d}));
    b.output(d);
    return b.model();
  };
  PassCheck r =
      check_pass(kPass, build, {{"a", Datum::tensor(random_f32({3}, 6))}, {"c", Datum::tensor(random_f32({3}, 7))}});
  EXPECT_EQ(r.report.rewrites_of("AlgebraicOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
