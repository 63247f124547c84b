#include <algorithm>
#include <cmath>
#include <cstring>

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

int count_log(const PassCheck& r, const std::string& text) {
  int n = 0;
  for (const opt::Rewrite& w : r.report.log)
    if (w.what.find(text) != std::string::npos) ++n;
  return n;
}

// Largest |opt - ref| over the elements of output i, relative to the largest |ref|.
double relative_error(const PassCheck& r, const std::vector<Datum>& ref, size_t i) {
  const Tensor& g = r.outputs.at(i).as_tensor();
  const Tensor& w = ref.at(i).as_tensor();
  double err = 0, mag = 0;
  for (int64_t k = 0; k < w.numel(); ++k) {
    err = std::max(err, double(std::fabs(g.data<float>()[k] - w.data<float>()[k])));
    mag = std::max(mag, double(std::fabs(w.data<float>()[k])));
  }
  return err / mag;
}

std::vector<Datum> unoptimized_outputs() {
  runtime::SessionOptions off;
  off.optimizer.enabled = false;
  auto s = runtime::Session::create(weights_model(), off);
  EXPECT_TRUE(s.is_ok());
  return (*s)->run(weights_feeds()).value();
}

TEST(QuantizationOptimizations, Fp16WeightsReadBySdxLinearConvPreCast) {
  opt::OptimizerOptions options = only(kPasses);
  options.fp16 = true;
  // float16 weights: relative 2^-11 per weight, sums of 64 products.
  PassCheck r = check_pass_with(options, weights_model, weights_feeds(), /*rtol=*/1e-2, /*atol=*/1e-3);
  EXPECT_EQ(r.report.rewrites_of("QuantizationOptimizations"), 3);  // w_mm, w_gemm, w_conv
  EXPECT_EQ(r.ops_after.at("sdx.Linear"), 2);                       // MatMul(x, w_mm), Gemm(h, w_gemm^T, bias)
  EXPECT_EQ(r.ops_after.at("Cast"), 1);                             // only the Conv's weight
  EXPECT_EQ(r.ops_after.count("Gemm"), 0u);
  EXPECT_EQ(count_log(r, "-> float16"), 3);
  EXPECT_EQ(count_log(r, "sdx.Linear reading it directly"), 2);
  EXPECT_EQ(count_log(r, "(transposed)"), 1);
  EXPECT_EQ(count_log(r, "float16 initializer"), 1);
  // The weights' float16 rounding, through two layers: well under 1e-3 of the outputs' range; an error in
  // the widening or the transposition would be of the order of the outputs themselves.
  const std::vector<Datum> ref = unoptimized_outputs();
  EXPECT_LT(relative_error(r, ref, 0), 1e-3);
  EXPECT_LT(relative_error(r, ref, 3), 1e-3);
}

TEST(QuantizationOptimizations, Int8WeightOnlyPerChannel) {
  opt::OptimizerOptions options = only(kPasses);
  options.int8 = true;
  PassCheck r = check_pass_with(options, weights_model, weights_feeds(), /*rtol=*/5e-2, /*atol=*/0.2);
  EXPECT_EQ(r.report.rewrites_of("QuantizationOptimizations"), 2);  // w_mm, w_gemm (not Conv, not small/shared)
  EXPECT_EQ(r.ops_after.at("sdx.Linear"), 2);
  EXPECT_EQ(r.ops_after.count("Cast"), 0u);
  EXPECT_EQ(count_log(r, "int8 + per-column scales"), 2);
  // int8 rounding (<= scale / 2 = max|W[:, n]| / 254 per weight) through two quantized layers: about
  // 0.5% of the output range here (measured 0.2-0.4%); a missing scale or a transposed weight breaks it
  // by orders of magnitude.
  const std::vector<Datum> ref = unoptimized_outputs();
  const double err = relative_error(r, ref, 0);
  EXPECT_LT(err, 1e-2);
  EXPECT_GT(err, 0.0);  // really quantized
  EXPECT_EQ(relative_error(r, ref, 3), 0.0);  // the Conv is left alone
}

TEST(QuantizationOptimizations, Int8WinsOverFp16AndConvStillPreCasts) {
  opt::OptimizerOptions options = only(kPasses);
  options.int8 = true;
  options.fp16 = true;
  PassCheck r = check_pass_with(options, weights_model, weights_feeds(), /*rtol=*/5e-2, /*atol=*/0.2);
  EXPECT_EQ(count_log(r, "int8 + per-column scales"), 2);
  EXPECT_EQ(r.ops_after.at("Cast"), 1);
}

// A MatMul + bias Add (as HorizontalFusion leaves a merged projection) becomes one sdx.Linear with the bias.
TEST(QuantizationOptimizations, LowpMatMulTakesItsBiasAdd) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {1, 1, 64});
    ir::Value* y = b.op("MatMul", {x, b.constant("w", random_f32({64, 48}, 41))});
    b.output(b.op("Relu", {b.op("Add", {y, b.constant("bias", random_f32({48}, 42))})}));
    return b.model();
  };
  for (bool int8 : {false, true}) {
    opt::OptimizerOptions options = only(kPasses);
    (int8 ? options.int8 : options.fp16) = true;
    PassCheck r = check_pass_with(options, build, {{"x", Datum::tensor(random_f32({1, 1, 64}, 43))}},
                                  /*rtol=*/int8 ? 3e-2 : 2e-3, /*atol=*/int8 ? 3e-2 : 2e-3);
    EXPECT_EQ(r.ops_after.at("sdx.Linear"), 1);
    EXPECT_EQ(r.ops_after.count("Add"), 0u);
    EXPECT_EQ(r.ops_after.count("Relu"), 0u);
  }
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

// Embedding tables kept in int8: Gather(Mul(Cast(q), s_row)) and Gather(DequantizeLinear(q, s, z))
// gather the integers first; a per-column scale ([1, D]) and an axis-1 Gather are left alone. Exact.
ir::Model dequantized_tables() {
  ModelBuilder b;
  ir::Value* idx = b.input("idx", {2, 3}, DType::kInt64);
  std::vector<int8_t> qv(40);
  for (size_t i = 0; i < qv.size(); ++i) qv[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  ir::Value* q = b.constant("q", make<int8_t>(DType::kInt8, qv, {10, 4}));
  ir::Value* f = b.op("Cast", {q}, {attr_i("to", 1)});
  b.output(b.op("Gather", {b.op("Mul", {f, b.constant("s_rows", random_f32({10, 1}, 5, 0.01f, 0.1f))}), idx}));
  ir::Value* q2 = b.constant("q2", make<int8_t>(DType::kInt8, qv, {10, 4}));
  ir::Value* dq = b.op("DequantizeLinear", {q2, b.constant("s", f32({0.03f}, {})), b.constant("z", make<int8_t>(DType::kInt8, {2}, {}))});
  b.output(b.op("Gather", {dq, idx}));
  // Per-column scales: row v of the product reads every column scale, so gathering first is left alone.
  ir::Value* q3 = b.constant("q3", make<int8_t>(DType::kInt8, qv, {10, 4}));
  ir::Value* cols = b.op("Mul", {b.op("Cast", {q3}, {attr_i("to", 1)}), b.constant("s_cols", random_f32({1, 4}, 6, 0.01f, 0.1f))});
  b.output(b.op("Gather", {cols, idx}));
  return b.model();
}

TEST(QuantizationOptimizations, GatherFromADequantizedTableGathersTheIntegers) {
  Tensor idx = make<int64_t>(DType::kInt64, {0, 9, -1, 3, 3, 5}, {2, 3});
  PassCheck r = check_pass(kPasses, dequantized_tables, {{"idx", Datum::tensor(idx)}}, /*rtol=*/0, /*atol=*/0);
  EXPECT_EQ(r.report.rewrites_of("QuantizationOptimizations"), 2);
  EXPECT_EQ(r.ops_after.at("Gather"), 4);  // q and s_rows, q2, and the per-column one left as it was
  EXPECT_EQ(r.ops_after.at("Cast"), 2);
}

}  // namespace
}  // namespace sdx::test

namespace sdx::test {
namespace {

// Weights a model stores in int8 and dequantizes itself, per column: MatMul(X, Mul(Cast(q), s)) + b -> Relu,
// and MatMul(X, DequantizeLinear(q, s, 0)) at M = rows (64 rows take oneDNN on W' packed once, 4 rows the
// small-M kernel). Left alone: a zero point that is not 0, and scales per row of q.
ir::Model dequantized_weights_model(int64_t rows) {
  ModelBuilder b(21);
  ir::Value* x = b.input("x", {rows, 128});
  std::vector<int8_t> qv(128 * 128);
  for (size_t i = 0; i < qv.size(); ++i) qv[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  auto q = [&](const std::string& name) { return b.constant(name, make<int8_t>(DType::kInt8, qv, {128, 128})); };
  ir::Value* w1 = b.op("Mul", {b.op("Cast", {q("q1")}, {attr_i("to", 1)}), b.constant("s1", random_f32({1, 128}, 3, 0.001f, 0.02f))});
  ir::Value* h = b.op("Relu", {b.op("Add", {b.op("MatMul", {x, w1}), b.constant("b1", random_f32({128}, 4))})});
  ir::Value* w2 = b.op("DequantizeLinear", {q("q2"), b.constant("s2", random_f32({128}, 5, 0.001f, 0.02f)),
                                            b.constant("z2", make<int8_t>(DType::kInt8, std::vector<int8_t>(128, 0), {128}))},
                       {attr_i("axis", 1)});
  b.output(b.op("MatMul", {h, w2}));
  ir::Value* w3 = b.op("DequantizeLinear", {q("q3"), b.constant("s3", f32({0.01f}, {})), b.constant("z3", make<int8_t>(DType::kInt8, {3}, {}))});
  b.output(b.op("MatMul", {x, w3}));
  ir::Value* w4 = b.op("Mul", {b.op("Cast", {q("q4")}, {attr_i("to", 1)}), b.constant("s4", random_f32({128, 1}, 6, 0.001f, 0.02f))});
  b.output(b.op("MatMul", {x, w4}));
  return b.model();
}

TEST(QuantizationOptimizations, Int8WeightsTheModelDequantizesAreReadDirectly) {
  for (int64_t rows : {64, 4}) {
    SCOPED_TRACE(rows);
    const std::vector<std::pair<std::string, Datum>> feeds = {{"x", Datum::tensor(random_f32({rows, 128}, 7))}};
    PassCheck r = check_pass({"QuantizationOptimizations", "UnusedFunctionOptimizations"},
                             [&] { return dequantized_weights_model(rows); }, feeds, /*rtol=*/1e-4, /*atol=*/1e-5);
    EXPECT_EQ(count_log(r, "reading it directly (no per-call dequantization)"), 2);
    EXPECT_EQ(r.ops_after.at("sdx.Linear"), 2);
    EXPECT_EQ(r.ops_after.at("MatMul"), 2);            // the nonzero zero point and the per-row scales
    EXPECT_EQ(r.ops_after.at("DequantizeLinear"), 1);  // w3's
    EXPECT_EQ(r.ops_after.at("Cast"), 1);              // w4's
    EXPECT_EQ(r.ops_after.count("Relu"), 0u);          // taken into the first sdx.Linear
  }
}

// The optimized session warms up, captures and replays (oneDNN on the dequantized weight, packed once at
// capture): every call gives the same bits, within float rounding of the unoptimized graph.
TEST(QuantizationOptimizations, DequantizedWeightLinearReplaysTheWarmupBits) {
  runtime::SessionOptions off;
  off.optimizer.enabled = false;
  auto ref = runtime::Session::create(dequantized_weights_model(64), off);
  auto opt = runtime::Session::create(dequantized_weights_model(64), {});
  ASSERT_TRUE(ref.is_ok() && opt.is_ok());
  const std::vector<std::pair<std::string, Datum>> feeds = {{"x", Datum::tensor(random_f32({64, 128}, 8))}};
  const std::vector<Datum> want = (*ref)->run(feeds).value();
  std::vector<Datum> first;
  for (int call = 0; call < 4; ++call) {
    runtime::ExecutionReport rep;
    auto got = (*opt)->run(feeds, {}, nullptr, &rep);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    if (call == 3) {
      EXPECT_EQ(rep.mode_used, runtime::ExecutionMode::kCpuReplay);
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const Tensor& g = (*got)[i].as_tensor();
      const Tensor& w = want[i].as_tensor();
      for (int64_t k = 0; k < w.numel(); ++k)
        ASSERT_NEAR(g.data<float>()[k], w.data<float>()[k], 1e-5 + 1e-5 * std::fabs(w.data<float>()[k])) << i << ":" << k;
      if (call == 0) first.push_back((*got)[i]);
      else EXPECT_EQ(std::memcmp(g.raw_data(), first[i].as_tensor().raw_data(), g.nbytes()), 0) << "call " << call;
    }
  }
}

}  // namespace
}  // namespace sdx::test

namespace sdx::test {
namespace {

// A QDQ model's products: MatMul(DequantizeLinear(QuantizeLinear(x)), DequantizeLinear(q)) + b becomes
// com.microsoft.MatMulIntegerToFloat on the quantized x (uint8 at 64 rows: oneDNN's int8 kernel; int8 X:
// the portable loop); an X dequantized per axis is left to the float rewrite (sdx.Linear).
ir::Model qdq_matmul_model() {
  ModelBuilder b(21);
  ir::Value* x = b.input("x", {64, 128});
  std::vector<int8_t> qv(128 * 128);
  for (size_t i = 0; i < qv.size(); ++i) qv[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  auto w = [&](const std::string& name) {
    return b.op("DequantizeLinear", {b.constant(name, make<int8_t>(DType::kInt8, qv, {128, 128})),
                                     b.constant(name + "_s", random_f32({128}, 5, 0.001f, 0.02f))},
                {attr_i("axis", 1)});
  };
  auto qdq = [&](ir::Value* v, Tensor zp) {
    ir::Value* s = b.constant("sx" + std::to_string(zp.numel()) + zp.shape().to_string(), f32({0.02f}, {}));
    ir::Value* z = b.constant("zx" + std::string(dtype_name(zp.dtype())), std::move(zp));
    return b.op("DequantizeLinear", {b.op("QuantizeLinear", {v, s, z}), s, z});
  };
  ir::Value* h = b.op("Add", {b.op("MatMul", {qdq(x, make<uint8_t>(DType::kUint8, {128}, {})), w("q1")}),
                              b.constant("b1", random_f32({128}, 4))});
  b.output(h);
  b.output(b.op("MatMul", {qdq(x, make<int8_t>(DType::kInt8, {-5}, {})), w("q2")}));
  // X quantized per column: not one scale, so the float rewrite takes it.
  ir::Value* sc = b.constant("sx_cols", random_f32({128}, 6, 0.01f, 0.03f));
  ir::Value* zc = b.constant("zx_cols", make<uint8_t>(DType::kUint8, std::vector<uint8_t>(128, 128), {128}));
  ir::Value* xc = b.op("DequantizeLinear", {b.op("QuantizeLinear", {x, sc, zc}, {attr_i("axis", 1)}), sc, zc}, {attr_i("axis", 1)});
  b.output(b.op("MatMul", {xc, w("q3")}));
  return b.model();
}

TEST(QuantizationOptimizations, QdqMatMulsBecomeMatMulIntegerToFloat) {
  const std::vector<std::pair<std::string, Datum>> feeds = {{"x", Datum::tensor(random_f32({64, 128}, 7, -2.f, 2.f))}};
  PassCheck r = check_pass({"QuantizationOptimizations", "UnusedFunctionOptimizations"}, qdq_matmul_model, feeds,
                           /*rtol=*/1e-4, /*atol=*/1e-4);
  EXPECT_EQ(count_log(r, "-> com.microsoft.MatMulIntegerToFloat (integer products)"), 2);
  EXPECT_EQ(r.ops_after.at("com.microsoft.MatMulIntegerToFloat"), 2);
  EXPECT_EQ(r.ops_after.at("sdx.Linear"), 1);  // the per-column X
  EXPECT_EQ(r.ops_after.count("Add"), 0u);     // the bias went into the first
  EXPECT_EQ(r.ops_after.count("MatMul"), 0u);
}

}  // namespace
}  // namespace sdx::test
