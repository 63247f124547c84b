// Pow(x, 2) -> x * x is bitwise exact (checked with zero tolerance). Sqrt/Reciprocal agree with
// pow(x, 0.5)/pow(x, -1) to 1 ulp and x * (1/c) with x / c to 1.5 ulp: checked with rtol 1e-6. A one-hot
// product becomes a Gather of W's rows, exact (zero tolerance), indices outside [0, N) included.
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

// int32 arange(0, n) shaped [1, ..., 1, n] (rank dims).
Tensor arange_i32(int32_t n, size_t rank) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  std::vector<int64_t> dims(rank, 1);
  dims.back() = n;
  return i32(v, dims);
}

ir::Attribute cast_to_float() { return attr_i("to", 1); }

TEST(StrengthReductionOptimizations, OneHotProductBecomesAGatherOfRows) {
  // Indices in range, and -1, 7 and 100: no class matches, so their rows are zero.
  const Tensor idx = i32({0, 6, 3, -1, 7, 100, 2, 2, 5, 1}, {2, 5, 1});
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 5, 1}, DType::kInt32);
    ir::Value* hot = b.op("Cast", {b.op("Equal", {x, b.constant("classes", arange_i32(7, 3))})}, {cast_to_float()});
    b.output(b.op("MatMul", {hot, b.constant("w", random_f32({7, 3}, 5, -2.f, 2.f))}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(idx)}}, 0.0, 0.0);
  EXPECT_EQ(r.report.rewrites_of("StrengthReductionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Clip", 1}, {"Gather", 1}, {"ReduceMax", 1}}));
}

TEST(StrengthReductionOptimizations, OneHotProductOfExpandedIndices) {
  // jax's one_hot: the indices broadcast to [..., N] first, the classes constant first in Equal.
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3, 1}, DType::kInt32);
    ir::Value* wide = b.op("Expand", {x, b.constant("shape", i64({3, 4}, {2}))});
    ir::Value* hot = b.op("Cast", {b.op("Equal", {b.constant("classes", arange_i32(4, 1)), wide})}, {cast_to_float()});
    b.output(b.op("MatMul", {hot, b.constant("w", random_f32({4, 2}, 6, -2.f, 2.f))}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(i32({3, -5, 0}, {3, 1}))}}, 0.0, 0.0);
  EXPECT_EQ(r.report.rewrites_of("StrengthReductionOptimizations"), 1);
}

TEST(StrengthReductionOptimizations, KeepsProductsThatAreNotOneHot) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4, 1}, DType::kInt32);
    // Classes out of order: not arange.
    ir::Value* h1 = b.op("Cast", {b.op("Equal", {x, b.constant("shuffled", i32({0, 2, 1}, {1, 3}))})}, {cast_to_float()});
    b.output(b.op("MatMul", {h1, b.constant("w1", random_f32({3, 2}, 7))}));
    // W with an infinity: 0 * inf is NaN in the product, not in a Gather.
    ir::Value* h2 = b.op("Cast", {b.op("Equal", {x, b.constant("c2", arange_i32(2, 2))})}, {cast_to_float()});
    b.output(b.op("IsNaN", {b.op("MatMul", {h2, b.constant("w2", f32({1, INFINITY, 2, 3}, {2, 2}))})}));
    // The one-hot tensor is read elsewhere too.
    ir::Value* h3 = b.op("Cast", {b.op("Equal", {x, b.constant("c3", arange_i32(2, 2))})}, {cast_to_float()});
    b.output(h3);
    b.output(b.op("MatMul", {h3, b.constant("w3", random_f32({2, 2}, 8))}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(i32({0, 1, 2, 1}, {4, 1}))}});
  EXPECT_EQ(r.report.rewrites_of("StrengthReductionOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
