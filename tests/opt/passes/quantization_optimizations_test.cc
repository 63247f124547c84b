#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"QuantizationOptimizations"};

ir::Model weights_model() {
  ModelBuilder b;
  ir::Value* x = b.input("x", {3, 64});
  ir::Value* img = b.input("img", {1, 4, 8, 8});
  ir::Value* h = b.op("MatMul", {x, b.constant("w_mm", random_f32({64, 32}, 11))});  // 2048 elements
  h = b.op("Gemm", {h, b.constant("w_gemm", random_f32({48, 32}, 12)), b.constant("bias", random_f32({48}, 13))},
           {attr_i("transB", 1)});                                    // 1536 elements
  ir::Value* small = b.constant("w_small", random_f32({48, 4}, 14));  // 192: too small
  b.output(b.op("MatMul", {h, small}));
  ir::Value* shared = b.constant("w_shared", random_f32({64, 64}, 15));  // also read as a MatMul's input 0
  b.output(b.op("MatMul", {x, shared}));
  b.output(b.op("MatMul", {shared, b.constant("v", random_f32({64, 2}, 17))}));
  b.output(b.op("Conv", {img, b.constant("w_conv", random_f32({32, 4, 3, 3}, 16))}, {attr_ints("pads", {1, 1, 1, 1})}));
  return b.model();
}

std::vector<std::pair<std::string, Datum>> weights_feeds() {
  return {{"x", Datum::tensor(random_f32({3, 64}, 1))}, {"img", Datum::tensor(random_f32({1, 4, 8, 8}, 2))}};
}

TEST(QuantizationOptimizations, Fp16PreCastsLargeMatMulGemmConvWeights) {
  opt::OptimizerOptions options = only(kPasses);
  options.fp16 = true;
  // float16 weights: relative 2^-11 per weight, sums of 64 products.
  PassCheck r = check_pass_with(options, weights_model, weights_feeds(), /*rtol=*/1e-2, /*atol=*/1e-3);
  EXPECT_EQ(r.report.rewrites_of("QuantizationOptimizations"), 3);  // w_mm, w_gemm, w_conv
  EXPECT_EQ(r.ops_after.at("Cast"), 3);
  int reported = 0;
  for (const opt::Rewrite& w : r.report.log)
    if (w.what.find("float16 initializer") != std::string::npos) ++reported;
  EXPECT_EQ(reported, 3);
}

TEST(QuantizationOptimizations, Fp16OffChangesNothing) {
  PassCheck r = check_pass(kPasses, weights_model, weights_feeds(), /*rtol=*/0, /*atol=*/0);
  EXPECT_EQ(r.report.rewrites_of("QuantizationOptimizations"), 0);
  EXPECT_EQ(r.ops_after.count("Cast"), 0u);
}

// x -> Q(s, z) -> DQ(s, z) -> Q(scale2, z) -> DQ(scale2, z)
ir::Model qdq_model(float second_scale) {
  ModelBuilder b;
  ir::Value* x = b.input("x", {4, 8});
  ir::Value* s = b.constant("s", f32({0.05f}, {}));
  ir::Value* z = b.constant("z", make<int8_t>(DType::kInt8, {3}, {}));
  ir::Value* s2 = b.constant("s2", f32({second_scale}, {}));
  ir::Value* z2 = b.constant("z2", make<int8_t>(DType::kInt8, {3}, {}));  // equal values, another initializer
  ir::Value* q = b.op("QuantizeLinear", {x, s, z});
  ir::Value* d = b.op("DequantizeLinear", {q, s, z});
  b.output(b.op("DequantizeLinear", {b.op("QuantizeLinear", {d, s2, z2}), s2, z2}));
  return b.model();
}

TEST(QuantizationOptimizations, QuantizeOfDequantizeWithTheSameParametersIsTheInput) {
  PassCheck r = check_pass(
      kPasses, [] { return qdq_model(0.05f); }, {{"x", Datum::tensor(random_f32({4, 8}, 3, -8, 8))}},
      /*rtol=*/0, /*atol=*/0);
  EXPECT_EQ(r.report.rewrites_of("QuantizationOptimizations"), 1);
  EXPECT_EQ(r.ops_after.at("QuantizeLinear"), 1);  // DequantizeLinear(QuantizeLinear(x)) rounds: kept
  EXPECT_EQ(r.ops_after.at("DequantizeLinear"), 2);
}

TEST(QuantizationOptimizations, KeepsRoundTripsWithOtherScales) {
  PassCheck r = check_pass(
      kPasses, [] { return qdq_model(0.07f); }, {{"x", Datum::tensor(random_f32({4, 8}, 4, -8, 8))}},
      /*rtol=*/0, /*atol=*/0);
  EXPECT_EQ(r.report.rewrites_of("QuantizationOptimizations"), 0);
  EXPECT_EQ(r.ops_after.at("QuantizeLinear"), 2);
}

}  // namespace
}  // namespace sdx::test
