// SharedWeightBatchingOptimizations: products of one weight over Gather(S, t) slices become one product
// over their concatenated rows, checked for the rewrite count and the resulting ops, and through
// check_pass for the unoptimized session's outputs on random inputs (within 1e-6 + 1e-5 |ref|: the
// taller product may sum in another order).
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"SharedWeightBatchingOptimizations"};

ir::Value* step(ModelBuilder& b, ir::Value* s, int64_t t) {
  return b.op("Gather", {s, b.constant("t" + std::to_string(t) + "_" + std::to_string(b.graph().nodes().size()),
                                       i64({t}, {}))});
}

TEST(SharedWeightBatchingOptimizations, UnrolledGemmStepsBecomeOneGemm) {
  // An exported unrolled RNN: 4 steps of Gemm(x_t, W_ih, b_ih, transB = 1), the steps' results summed.
  auto build = [] {
    ModelBuilder b;
    ir::Value* s = b.input("s", {4, 2, 8});
    ir::Value* w = b.constant("w", random_f32({6, 8}, 1));
    ir::Value* bias = b.constant("b", random_f32({6}, 2));
    std::vector<ir::Value*> ys;
    for (int64_t t = 0; t < 4; ++t) ys.push_back(b.op("Gemm", {step(b, s, t), w, bias}, {attr_i("transB", 1)}));
    b.output(b.op("Sum", ys));
    b.output(ys[2]);  // a graph output keeps its name
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"s", Datum::tensor(random_f32({4, 2, 8}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("SharedWeightBatchingOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Concat", 1}, {"Gather", 4}, {"Gemm", 1}, {"Split", 1}, {"Sum", 1}}));
}

TEST(SharedWeightBatchingOptimizations, MatMulsOfStepsInAnyOrder) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* s = b.input("s", {3, 1, 8});
    ir::Value* w = b.constant("w", random_f32({8, 5}, 4));
    ir::Value* y2 = b.op("MatMul", {step(b, s, 2), w});
    ir::Value* y0 = b.op("MatMul", {step(b, s, 0), w});
    b.output(b.op("Sub", {y2, y0}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"s", Datum::tensor(random_f32({3, 1, 8}, 5))}});
  EXPECT_EQ(r.report.rewrites_of("SharedWeightBatchingOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Concat", 1}, {"Gather", 2}, {"MatMul", 1}, {"Split", 1}, {"Sub", 1}}));
}

TEST(SharedWeightBatchingOptimizations, KeepsProductsItCannotBatch) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* s = b.input("s", {2, 2, 8});
    ir::Value* i = b.input("i", {}, DType::kInt64);
    std::vector<ir::Value*> ys;
    // Different weights.
    ys.push_back(b.op("MatMul", {step(b, s, 0), b.constant("wa", random_f32({8, 3}, 6))}));
    ys.push_back(b.op("MatMul", {step(b, s, 1), b.constant("wb", random_f32({8, 3}, 7))}));
    // A bias of one row per input row: it would not cover the taller product.
    ir::Value* w = b.constant("w", random_f32({3, 8}, 8));
    ir::Value* c = b.constant("c", random_f32({2, 3}, 9));
    ys.push_back(b.op("Gemm", {step(b, s, 0), w, c}, {attr_i("transB", 1)}));
    ys.push_back(b.op("Gemm", {step(b, s, 1), w, c}, {attr_i("transB", 1)}));
    // Indices that are not constants.
    ir::Value* w2 = b.constant("w2", random_f32({8, 3}, 10));
    ys.push_back(b.op("MatMul", {b.op("Gather", {s, i}), w2}));
    ys.push_back(b.op("MatMul", {b.op("Gather", {s, i}), w2}));
    // Different attributes (alpha): neither pair has two alike.
    ir::Value* w3 = b.constant("w3", random_f32({3, 8}, 11));
    ys.push_back(b.op("Gemm", {step(b, s, 0), w3}, {attr_i("transB", 1)}));
    ys.push_back(b.op("Gemm", {step(b, s, 1), w3}, {attr_i("transB", 1), attr_f("alpha", 2.f)}));
    b.output(b.op("Sum", ys));
    // Rows of one element each (Gather of a 2-D S gives a vector): a Concat would make one long vector.
    ir::Value* s2 = b.input("s2", {2, 8});
    ir::Value* w4 = b.constant("w4", random_f32({8, 3}, 13));
    b.output(b.op("Add", {b.op("MatMul", {step(b, s2, 0), w4}), b.op("MatMul", {step(b, s2, 1), w4})}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"s", Datum::tensor(random_f32({2, 2, 8}, 12))}, {"i", Datum::tensor(i64({1}, {}))},
                            {"s2", Datum::tensor(random_f32({2, 8}, 14))}});
  EXPECT_EQ(r.report.rewrites_of("SharedWeightBatchingOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
