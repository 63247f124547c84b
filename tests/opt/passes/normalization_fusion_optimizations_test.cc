// NormalizationFusionOptimizations: decomposed LayerNorm / RMSNorm become one op, inference
// BatchNormalization (and per-channel Mul / Add after a Conv) folds into Conv / Gemm / MatMul weights. Equivalence on random inputs:
// rtol 1e-5, atol 1e-5 (the fused norms keep statistics in double; folding rounds W * s once).
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

constexpr const char* kPass = "NormalizationFusionOptimizations";
constexpr double kRtol = 1e-5, kAtol = 1e-5;

Tensor scalar(float v) { return f32({v}, {}); }
Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -2.f, 3.f)); }

// The PyTorch export of nn.LayerNorm before opset 17 (ReduceMean axes as attribute before opset
// 18, as a constant input from 18).
ir::Value* layer_norm(ModelBuilder& b, ir::Value* x, int opset, bool pow, bool reciprocal, const std::string& k) {
  auto mean = [&](ir::Value* v) {
    if (opset >= 18) return b.op("ReduceMean", {v, b.constant("axes" + k + v->name(), i64({-1}, {1}))});
    return b.op("ReduceMean", {v}, {attr_ints("axes", {-1})});
  };
  ir::Value* d = b.op("Sub", {x, mean(x)});
  ir::Value* sq = pow ? b.op("Pow", {d, b.constant("two" + k, scalar(2.f))}) : b.op("Mul", {d, d});
  ir::Value* s = b.op("Sqrt", {b.op("Add", {mean(sq), b.constant("eps" + k, scalar(1e-5f))})});
  return reciprocal ? b.op("Mul", {d, b.op("Reciprocal", {s})}) : b.op("Div", {d, s});
}

TEST(NormalizationFusionOptimizations, LayerNormWithScaleAndBias) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {2, 3, 16});
    ir::Value* n = layer_norm(b, x, 17, true, false, "a");
    ir::Value* y = b.op("Mul", {n, b.constant("gamma", random_f32({16}, 7, 0.5f, 1.5f))});
    b.output(b.op("Add", {b.constant("beta", random_f32({1, 1, 16}, 8)), y}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 3, 16}, 1)}}, kRtol, kAtol);
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"LayerNormalization", 1}}));
}

// x of unknown shape (after a Reshape to a computed shape, PP-OCR's SVTR blocks): fused when gamma
// and beta have rank <= 1 (N from gamma), not with a rank-2 gamma, which could add a dim.
TEST(NormalizationFusionOptimizations, LayerNormOverAValueOfUnknownShape) {
  auto build = [](bool rank2_gamma) {
    return [rank2_gamma] {
      ModelBuilder b(17);
      ir::Value* x = b.graph().add_input("x", ir::TypeInfo::tensor(DType::kFloat32));
      ir::Value* n = layer_norm(b, x, 17, true, false, "u");
      ir::Value* gamma = rank2_gamma ? b.constant("gamma", random_f32({1, 16}, 7, 0.5f, 1.5f))
                                     : b.constant("gamma", random_f32({16}, 7, 0.5f, 1.5f));
      b.output(b.op("Add", {b.op("Mul", {n, gamma}), b.constant("beta", random_f32({16}, 8))}));
      return b.model();
    };
  };
  PassCheck r = check_pass({kPass}, build(false), {{"x", feed({2, 3, 16}, 1)}}, kRtol, kAtol);
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"LayerNormalization", 1}}));
  PassCheck kept = check_pass({kPass}, build(true), {{"x", feed({2, 3, 16}, 1)}}, kRtol, kAtol);
  EXPECT_EQ(kept.report.rewrites_of(kPass), 0);
}

TEST(NormalizationFusionOptimizations, LayerNormOpset18AxesInputSquareAndReciprocalNoAffine) {
  auto build = [] {
    ModelBuilder b(18);
    ir::Value* x = b.input("x", {4, 10});
    b.output(layer_norm(b, x, 18, false, true, "b"));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({4, 10}, 2)}}, kRtol, kAtol);
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"LayerNormalization", 1}}));
}

TEST(NormalizationFusionOptimizations, RmsNormForms) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {2, 5, 12});
    auto rms = [&](const std::string& k) {
      ir::Value* ms =
          b.op("ReduceMean", {b.op("Pow", {x, b.constant("two" + k, scalar(2.f))})}, {attr_ints("axes", {2})});
      return b.op("Sqrt", {b.op("Add", {b.constant("eps" + k, scalar(1e-6f)), ms})});
    };
    // HF Llama: x * Reciprocal(Sqrt(mean(x^2) + eps)) * weight
    ir::Value* n1 = b.op("Mul", {x, b.op("Reciprocal", {rms("1")})});
    b.output(b.op("Mul", {b.constant("w", random_f32({12}, 9, 0.5f, 1.5f)), n1}));
    // Div by the root, no weight.
    b.output(b.op("Div", {x, rms("2")}));
    // Mul by Div(1, root).
    b.output(b.op("Mul", {b.op("Div", {b.constant("one", scalar(1.f)), rms("3")}), x}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 5, 12}, 3)}}, kRtol, kAtol);
  EXPECT_EQ(r.report.rewrites_of(kPass), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"RMSNormalization", 3}}));
}

TEST(NormalizationFusionOptimizations, LeavesOtherAxesAndSharedIntermediatesAlone) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {3, 6, 8});
    // Mean over axis 1, not the last axis.
    ir::Value* m = b.op("ReduceMean", {x}, {attr_ints("axes", {1})});
    ir::Value* d = b.op("Sub", {x, m});
    ir::Value* v = b.op("ReduceMean", {b.op("Mul", {d, d})}, {attr_ints("axes", {1})});
    b.output(b.op("Div", {d, b.op("Sqrt", {b.op("Add", {v, b.constant("eps", scalar(1e-5f))})})}));
    // A LayerNorm whose centered value is also a graph output.
    ir::Value* x2 = b.input("x2", {3, 8});
    ir::Value* d2 = b.op("Sub", {x2, b.op("ReduceMean", {x2}, {attr_ints("axes", {-1})})});
    ir::Value* v2 = b.op("ReduceMean", {b.op("Mul", {d2, d2})}, {attr_ints("axes", {-1})});
    b.output(b.op("Div", {d2, b.op("Sqrt", {b.op("Add", {v2, b.constant("eps2", scalar(1e-5f))})})}));
    b.output(d2);
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({3, 6, 8}, 4)}, {"x2", feed({3, 8}, 5)}}, kRtol, kAtol);
  // No LayerNormalization. The second pattern's tail is still the RMSNorm of the (kept) centered
  // value d2, which the RMSNorm rule fuses: d2 / Sqrt(ReduceMean(d2 * d2) + eps).
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after.count("LayerNormalization"), 0u);
  EXPECT_EQ(r.ops_after.at("RMSNormalization"), 1);
  EXPECT_EQ(r.ops_after.at("Sub"), 2);
}

// BatchNormalization parameters for c channels (variance > 0).
std::vector<ir::Value*> bn_params(ModelBuilder& b, int64_t c, const std::string& k) {
  return {b.constant("scale" + k, random_f32({c}, 11, 0.5f, 2.f)), b.constant("bias" + k, random_f32({c}, 12)),
          b.constant("mean" + k, random_f32({c}, 13)), b.constant("var" + k, random_f32({c}, 14, 0.2f, 2.f))};
}
ir::Value* batch_norm(ModelBuilder& b, ir::Value* x, int64_t c, const std::string& k) {
  std::vector<ir::Value*> in = {x};
  for (ir::Value* p : bn_params(b, c, k)) in.push_back(p);
  return b.op("BatchNormalization", in, {attr_f("epsilon", 1e-3f)});
}

TEST(NormalizationFusionOptimizations, FoldsBatchNormIntoConvGemmAndMatMul) {
  auto build = [] {
    ModelBuilder b(15);
    ir::Value* x = b.input("x", {2, 3, 6, 6});
    ir::Value* conv =
        b.op("Conv", {x, b.constant("w", random_f32({4, 3, 3, 3}, 15)), b.constant("b", random_f32({4}, 16))},
             {attr_ints("pads", {1, 1, 1, 1})});
    b.output(batch_norm(b, conv, 4, "c"));
    ir::Value* conv2 = b.op("Conv", {x, b.constant("w2", random_f32({6, 1, 3, 3}, 17))}, {attr_i("group", 3)});
    b.output(batch_norm(b, conv2, 6, "d"));
    ir::Value* a = b.input("a", {5, 7});
    ir::Value* gemm = b.op("Gemm", {a, b.constant("gw", random_f32({8, 7}, 18)), b.constant("gc", random_f32({8}, 19))},
                           {attr_i("transB", 1), attr_f("alpha", 0.5f), attr_f("beta", 2.f)});
    b.output(batch_norm(b, gemm, 8, "g"));
    ir::Value* mm = b.op("MatMul", {a, b.constant("mw", random_f32({7, 9}, 20))});
    b.output(batch_norm(b, b.op("Add", {mm, b.constant("mb", random_f32({1, 9}, 21))}), 9, "m"));
    b.output(batch_norm(b, b.op("MatMul", {a, b.constant("mw2", random_f32({7, 3}, 22))}), 3, "n"));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 3, 6, 6}, 6)}, {"a", feed({5, 7}, 7)}}, kRtol, kAtol);
  EXPECT_EQ(r.report.rewrites_of(kPass), 5);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 2}, {"Conv", 2}, {"Gemm", 1}, {"MatMul", 2}}));
}

// Paddle exports BatchNormalization after a convolution as Mul and Add by per-channel constants:
// both fold into the convolution ([1, M, 1, 1], [M, 1, 1], one element; with and without a bias;
// grouped). A per-position scale ([1, 1, H, W]), a shared output and a non-constant scale do not.
TEST(NormalizationFusionOptimizations, FoldsPerChannelMulAndAddIntoConv) {
  auto build = [] {
    ModelBuilder b(15);
    ir::Value* x = b.input("x", {2, 4, 5, 5});
    ir::Value* c1 = b.op("Conv", {x, b.constant("w1", random_f32({6, 4, 3, 3}, 30))}, {attr_ints("pads", {1, 1, 1, 1})});
    ir::Value* m1 = b.op("Mul", {c1, b.constant("s1", random_f32({1, 6, 1, 1}, 31))});
    b.output(b.op("Add", {b.constant("t1", random_f32({6, 1, 1}, 32)), m1}));
    ir::Value* c2 = b.op("Conv", {x, b.constant("w2", random_f32({8, 1, 3, 3}, 33)), b.constant("b2", random_f32({8}, 34))},
                         {attr_i("group", 4)});
    b.output(b.op("Mul", {b.op("Add", {c2, b.constant("t2", random_f32({1}, 35))}), b.constant("s2", f32({0.5f}, {}))}));
    // Left alone: a scale per position, a shared convolution output, a scale computed from x.
    ir::Value* c3 = b.op("Conv", {x, b.constant("w3", random_f32({2, 4, 1, 1}, 36))});
    b.output(b.op("Mul", {c3, b.constant("s3", random_f32({1, 1, 5, 5}, 37))}));
    ir::Value* c4 = b.op("Conv", {x, b.constant("w4", random_f32({2, 4, 1, 1}, 38))});
    b.output(c4);
    b.output(b.op("Add", {c4, b.constant("t4", random_f32({1, 2, 1, 1}, 39))}));
    ir::Value* c5 = b.op("Conv", {x, b.constant("w5", random_f32({4, 4, 1, 1}, 40))});
    b.output(b.op("Mul", {c5, x}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 4, 5, 5}, 10)}}, kRtol, kAtol);
  EXPECT_EQ(r.report.rewrites_of(kPass), 4);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"Conv", 5}, {"Mul", 2}}));
}

TEST(NormalizationFusionOptimizations, KeepsBatchNormWhenTheConvOutputIsShared) {
  auto build = [] {
    ModelBuilder b(15);
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* conv = b.op("Conv", {x, b.constant("w", random_f32({3, 2, 1, 1}, 23))});
    b.output(batch_norm(b, conv, 3, "c"));
    b.output(conv);
    // Over a 3-D MatMul the channel axis is 1, not the MatMul's last axis.
    ir::Value* a = b.input("a", {2, 4, 5});
    b.output(batch_norm(b, b.op("MatMul", {a, b.constant("mw", random_f32({5, 4}, 24))}), 4, "m"));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({1, 2, 4, 4}, 8)}, {"a", feed({2, 4, 5}, 9)}}, kRtol, kAtol);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
  EXPECT_EQ(r.ops_after.at("BatchNormalization"), 2);
}

}  // namespace
}  // namespace sdx::test
