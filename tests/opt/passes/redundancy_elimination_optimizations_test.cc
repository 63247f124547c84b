#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"RedundancyEliminationOptimizations", "UnusedFunctionOptimizations"};

TEST(RedundancyEliminationOptimizations, MergesDuplicateInitializersAndConstants) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 4});
    ir::Value* w1 = b.constant("w1", random_f32({4}, 7));
    ir::Value* w2 = b.constant("w2", random_f32({4}, 7));  // same bytes, another name
    ir::Value* w3 = b.constant("w3", random_f32({4}, 8));  // different
    ir::Value* c1 = b.op("Constant", {}, {attr_t("value", f32({1, 2, 3, 4}, {4}))});
    ir::Value* c2 = b.op("Constant", {}, {attr_t("value", f32({1, 2, 3, 4}, {4}))});
    ir::Value* c3 = b.op("Constant", {}, {attr_t("value", f32({1, 2, 3, 5}, {4}))});
    ir::Value* y = b.op("Add", {b.op("Mul", {x, w1}), b.op("Mul", {x, w2})});
    y = b.op("Add", {b.op("Sub", {y, w3}), b.op("Add", {c1, c2})});
    b.output(b.op("Sub", {y, c3}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"x", Datum::tensor(random_f32({2, 4}, 1))}});
  EXPECT_EQ(r.report.rewrites_of("RedundancyEliminationOptimizations"), 2);  // w2 -> w1, c2 -> c1
  EXPECT_EQ(r.ops_after.at("Constant"), 2);
}

TEST(RedundancyEliminationOptimizations, RemovesExactCastRoundTripsOnly) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {6});
    ir::Value* i = b.input("i", {6}, DType::kInt16);
    ir::Value* exact = b.op("Cast", {b.op("Cast", {x}, {attr_i("to", 11)})}, {attr_i("to", 1)});      // f32->f64->f32
    ir::Value* exact_int = b.op("Cast", {b.op("Cast", {i}, {attr_i("to", 1)})}, {attr_i("to", 5)});   // i16->f32->i16
    ir::Value* lossy = b.op("Cast", {b.op("Cast", {x}, {attr_i("to", 10)})}, {attr_i("to", 1)});      // f32->f16->f32
    ir::Value* lossy_int = b.op("Cast", {b.op("Cast", {i}, {attr_i("to", 10)})}, {attr_i("to", 5)});  // i16->f16->i16
    b.output(b.op("Add", {b.op("Relu", {exact}), lossy}));
    b.output(b.op("Add", {b.op("Abs", {exact_int}), lossy_int}));
    return b.model();
  };
  Tensor ints = Tensor::allocate(DType::kInt16, Shape{6}).value();
  const int16_t v[6] = {-32768, -2049, -1, 0, 2049, 32767};  // 2049 is not a float16
  for (int k = 0; k < 6; ++k) ints.data<int16_t>()[k] = v[k];
  PassCheck r =
      check_pass(kPasses, build, {{"x", Datum::tensor(random_f32({6}, 2, -100.f, 100.f))}, {"i", Datum::tensor(ints)}});
  EXPECT_EQ(r.report.rewrites_of("RedundancyEliminationOptimizations"), 2);
  EXPECT_EQ(r.ops_after.at("Cast"), 4);  // the two lossy round trips
}

TEST(RedundancyEliminationOptimizations, CollapsesReshapeChainsWithStaticShape) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3, 4});
    ir::Value* r = b.op("Reshape", {b.op("Relu", {x}), b.constant("s1", i64({6, 4}, {2}))});
    ir::Value* u = b.op("Unsqueeze", {r, b.constant("axes", i64({0}, {1}))});                     // [1, 6, 4]
    ir::Value* f = b.op("Flatten", {u}, {attr_i("axis", 2)});                                     // [6, 4]
    ir::Value* s = b.op("Squeeze", {b.op("Reshape", {f, b.constant("s2", i64({1, 24}, {2}))})});  // [24]
    b.output(b.op("Exp", {s}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"x", Datum::tensor(random_f32({2, 3, 4}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("RedundancyEliminationOptimizations"), 4);  // each link re-rooted on the chain input
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Relu", 1}, {"Reshape", 1}, {"Exp", 1}}));
}

TEST(RedundancyEliminationOptimizations, KeepsChainsWithoutStaticShapeAndDifferentConstants) {
  auto build = [] {
    ModelBuilder b;
    std::vector<ir::Dim> dims{ir::Dim::symbolic("n"), ir::Dim::fixed(4)};
    ir::Value* x = b.graph().add_input("x", ir::TypeInfo::tensor(DType::kFloat32, dims));
    ir::Value* u = b.op("Unsqueeze", {b.op("Relu", {x}), b.constant("axes", i64({0}, {1}))});  // [1, n, 4]
    ir::Value* f = b.op("Flatten", {u}, {attr_i("axis", 1)});                                  // [1, 4n]
    ir::Value* w1 = b.constant("w1", f32({1, 2}, {2}));
    ir::Value* w2 = b.constant("w2", f32({1, 2}, {1, 2}));  // same bytes, other shape
    b.output(b.op("Exp", {f}));
    b.output(b.op("Add", {w1, w2}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"x", Datum::tensor(random_f32({3, 4}, 4))}});
  EXPECT_EQ(r.report.rewrites_of("RedundancyEliminationOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
