// AttentionFusionOptimizations: each fusing test checks the rewrite count, the fused node (inputs,
// scale, causal, mask_value) and, through check_pass, that the optimized session computes the same
// outputs as the unoptimized one on random inputs within |opt - ref| <= 1e-6 + 1e-5 |ref|.
#include <cmath>
#include <limits>

#include "../pass_test_util.h"
#include "ir/type_inference.h"
#include "opt/rewrite_util.h"

namespace sdx::test {
namespace {

constexpr float kFloatMin = -3.4028234663852886e38f;  // torch.finfo(torch.float32).min
const std::vector<std::string> kPasses = {"AttentionFusionOptimizations"};

// The graph after running `passes` (types inferred first, as a session does).
ir::Model optimized(const std::function<ir::Model()>& build, const std::vector<std::string>& passes = kPasses) {
  ir::Model m = build();
  EXPECT_TRUE(ir::infer_types(*m.graph).is_ok());
  auto rep = opt::optimize(*m.graph, only(passes));
  EXPECT_TRUE(rep.is_ok()) << rep.status().to_string();
  return m;
}

const ir::Node* find_node(const ir::Graph& g, const std::string& op, const std::string& domain = "") {
  for (const auto& n : g.nodes())
    if (n->op_type() == op && n->domain() == domain) return n.get();
  return nullptr;
}

Tensor scalar_f32(float v) { return f32({v}, {}); }
Tensor scalar_i64(int64_t v) { return i64({v}, {}); }

// Lower-triangular (end-aligned) keep mask of [rows, cols] with the given leading dims.
Tensor tril_bool(std::vector<int64_t> dims, int64_t rows, int64_t cols) {
  std::vector<bool> v;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) v.push_back(j <= i + cols - rows);
  dims.push_back(rows);
  dims.push_back(cols);
  return bools(v, dims);
}

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -2.f, 2.f)); }

// Encoder layer attention as torch.onnx exports it: projections, Reshape [1, S, H, D], Transpose Q/V to
// [1, H, S, D] and K straight to [1, H, D, S] (perm [0, 2, 3, 1]), MatMul, Div sqrt(D), Softmax, MatMul.
ir::Model encoder_attention(int64_t S, int64_t H, int64_t D) {
  ModelBuilder b;
  const int64_t hid = H * D;
  ir::Value* x = b.input("x", {1, S, hid});
  ir::Value* split = b.constant("split", i64({1, S, H, D}, {4}));
  auto heads = [&](const char* name, std::vector<int64_t> perm, unsigned seed) {
    ir::Value* w = b.constant(std::string("w") + name, random_f32({hid, hid}, seed, -0.5f, 0.5f));
    ir::Value* r = b.op("Reshape", {b.op("MatMul", {x, w}), split});
    return b.op("Transpose", {r}, {attr_ints("perm", std::move(perm))});
  };
  ir::Value* q = heads("q", {0, 2, 1, 3}, 11);
  ir::Value* k = heads("k", {0, 2, 3, 1}, 12);
  ir::Value* v = heads("v", {0, 2, 1, 3}, 13);
  ir::Value* s = b.op("Div", {b.op("MatMul", {q, k}), b.constant("sqrt_d", scalar_f32(std::sqrt(float(D))))});
  ir::Value* ctx = b.op("MatMul", {b.op("Softmax", {s}, {attr_i("axis", -1)}), v});
  ir::Value* t = b.op("Transpose", {ctx}, {attr_ints("perm", {0, 2, 1, 3})});
  b.output(b.op("Reshape", {t, b.constant("merge", i64({1, S, hid}, {3}))}));
  return b.model();
}

TEST(AttentionFusionOptimizations, EncoderAttentionWithKAlreadyTransposed) {
  auto build = [] { return encoder_attention(6, 2, 4); };
  PassCheck r = check_pass(kPasses, build, {{"x", feed({1, 6, 8}, 1)}});
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after["sdx.Attention"], 1);
  EXPECT_EQ(r.ops_after.count("Softmax"), 0u);
  EXPECT_EQ(r.ops_after["MatMul"], 3);     // the projections only
  EXPECT_EQ(r.ops_after["Transpose"], 4);  // Q, V, the output, and K's [0, 2, 1, 3] replacing [0, 2, 3, 1]
  ir::Model m = optimized(build);
  const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->num_inputs(), 3);
  EXPECT_FLOAT_EQ(a->attr_float("scale", 0), 0.5f);
  EXPECT_EQ(a->attr_int("causal", -1), 0);
  const ir::Node* kt = a->input(1)->producer();
  ASSERT_TRUE(kt && kt->op_type() == "Transpose");
  EXPECT_EQ(kt->attr_ints("perm"), (std::vector<int64_t>{0, 2, 1, 3}));
}

// Q, K, V inputs [B, H, S, D]; K^T = Transpose(K, [0, 1, 3, 2]); scores scaled by `scale_op`.
ir::Model qkv_attention(int64_t B, int64_t H, int64_t Sq, int64_t Skv, int64_t D, int opset = 17) {
  ModelBuilder b(opset);
  ir::Value* q = b.input("q", {B, H, Sq, D});
  ir::Value* k = b.input("k", {B, H, Skv, D});
  ir::Value* v = b.input("v", {B, H, Skv, D});
  ir::Value* kt = b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})});
  ir::Value* s = b.op("Mul", {b.op("MatMul", {q, kt}), b.constant("inv_sqrt_d", scalar_f32(0.3f))});
  b.output(b.op("MatMul", {b.op("Softmax", {s}, {attr_i("axis", 3)}), v}));
  return b.model();
}

std::vector<std::pair<std::string, Datum>> qkv_feeds(int64_t B, int64_t H, int64_t Sq, int64_t Skv, int64_t D) {
  return {{"q", feed({B, H, Sq, D}, 2)}, {"k", feed({B, H, Skv, D}, 3)}, {"v", feed({B, H, Skv, D}, 4)}};
}

TEST(AttentionFusionOptimizations, KTransposedInsideTheGraphAndMulScale) {
  auto build = [] { return qkv_attention(2, 3, 5, 7, 4); };
  PassCheck r = check_pass(kPasses, build, qkv_feeds(2, 3, 5, 7, 4));
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.Attention", 1}}));  // K's Transpose went too
  ir::Model m = optimized(build);
  const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->input(1)->name(), "k");
  EXPECT_FLOAT_EQ(a->attr_float("scale", 0), 0.3f);
}

TEST(AttentionFusionOptimizations, ScaleOnQAndKBeforeTheMatMulOpset11Softmax) {
  // Attention-23's function body scales Q and K^T by sqrt(scale) each; Softmax opset 11 at axis 3.
  auto build = [] {
    ModelBuilder b(11);
    ir::Value* q = b.input("q", {1, 2, 4, 8});
    ir::Value* k = b.input("k", {1, 2, 6, 8});
    ir::Value* v = b.input("v", {1, 2, 6, 3});
    ir::Value* c = b.constant("c", scalar_f32(0.6f));
    ir::Value* qs = b.op("Mul", {q, c});
    ir::Value* kt =
        b.op("Div", {b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})}), b.constant("c2", scalar_f32(2.f))});
    b.output(b.op("MatMul", {b.op("Softmax", {b.op("MatMul", {qs, kt})}, {attr_i("axis", 3)}), v}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"q", feed({1, 2, 4, 8}, 5)}, {"k", feed({1, 2, 6, 8}, 6)}, {"v", feed({1, 2, 6, 3}, 7)}});
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.Attention", 1}}));
  ir::Model m = optimized(build);
  EXPECT_FLOAT_EQ(find_node(*m.graph, "Attention", "sdx")->attr_float("scale", 0), 0.3f);
}

TEST(AttentionFusionOptimizations, BertAdditivePaddingMaskStaysAsInput) {
  // HF BERT: (1 - attention_mask[:, None, None, :].float()) * -10000 added to the scaled scores.
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* q = b.input("q", {2, 2, 5, 4});
    ir::Value* k = b.input("k", {2, 2, 5, 4});
    ir::Value* v = b.input("v", {2, 2, 5, 4});
    ir::Value* am = b.input("attention_mask", {2, 5}, DType::kInt64);
    ir::Value* ext = b.op("Unsqueeze", {am, b.constant("axes", i64({1, 2}, {2}))});
    ir::Value* inv = b.op("Sub", {b.constant("one", scalar_f32(1.f)), b.op("Cast", {ext}, {attr_i("to", 1)})});
    ir::Value* mask = b.op("Mul", {inv, b.constant("big", scalar_f32(-10000.f))});
    ir::Value* kt = b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})});
    ir::Value* s = b.op("Div", {b.op("MatMul", {q, kt}), b.constant("sqrt_d", scalar_f32(2.f))});
    b.output(b.op("MatMul", {b.op("Softmax", {b.op("Add", {s, mask})}, {attr_i("axis", -1)}), v}));
    return b.model();
  };
  std::vector<std::pair<std::string, Datum>> feeds = {
      {"q", feed({2, 2, 5, 4}, 8)},
      {"k", feed({2, 2, 5, 4}, 9)},
      {"v", feed({2, 2, 5, 4}, 10)},
      {"attention_mask", Datum::tensor(i64({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, {2, 5}))}};
  PassCheck r = check_pass(kPasses, build, feeds);
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after["sdx.Attention"], 1);
  EXPECT_EQ(r.ops_after.count("Softmax"), 0u);
  ir::Model m = optimized(build);
  const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
  ASSERT_EQ(a->num_inputs(), 4);
  EXPECT_EQ(a->input(3)->producer()->op_type(), "Mul");
  EXPECT_EQ(a->attr_int("causal", -1), 0);
}

// Where-masked scores: keep = input bool [B, 1, Sq, Skv]; inverted: Where(hide, fill, scores).
ir::Model where_attention(bool inverted, float fill) {
  ModelBuilder b;
  ir::Value* q = b.input("q", {2, 2, 4, 4});
  ir::Value* k = b.input("k", {2, 2, 6, 4});
  ir::Value* v = b.input("v", {2, 2, 6, 4});
  ir::Value* m = b.input("m", {2, 1, 4, 6}, DType::kBool);
  ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
  ir::Value* f = b.constant("fill", scalar_f32(fill));
  ir::Value* w = inverted ? b.op("Where", {m, f, s}) : b.op("Where", {m, s, f});
  b.output(b.op("MatMul", {b.op("Softmax", {w}), v}));
  return b.model();
}

TEST(AttentionFusionOptimizations, BoolWhereMaskBothPolarities) {
  std::vector<bool> keep;
  for (int i = 0; i < 48; ++i) keep.push_back((i * 7) % 5 != 0);
  std::vector<std::pair<std::string, Datum>> feeds = {{"q", feed({2, 2, 4, 4}, 11)},
                                                      {"k", feed({2, 2, 6, 4}, 12)},
                                                      {"v", feed({2, 2, 6, 4}, 13)},
                                                      {"m", Datum::tensor(bools(keep, {2, 1, 4, 6}))}};
  for (bool inverted : {false, true}) {
    for (float fill : {kFloatMin, -std::numeric_limits<float>::infinity(), -3.f}) {
      auto build = [&] { return where_attention(inverted, fill); };
      PassCheck r = check_pass(kPasses, build, feeds);
      EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
      EXPECT_EQ(r.ops_after["sdx.Attention"], 1);
      EXPECT_EQ(r.ops_after.count("Not"), inverted ? 1u : 0u);
      ir::Model m = optimized(build);
      const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
      ASSERT_EQ(a->num_inputs(), 4);
      EXPECT_EQ(a->attr_float("mask_value", 0), fill);
      EXPECT_EQ(a->attr_int("causal", -1), 0);
    }
  }
}

// Scores masked by a constant: Add(scores, mask) or Where(mask, scores, fill); Q [1, 2, Sq, 4].
ir::Model constant_mask_attention(int64_t Sq, int64_t Skv, Tensor mask, bool where, float fill = kFloatMin) {
  ModelBuilder b;
  ir::Value* q = b.input("q", {1, 2, Sq, 4});
  ir::Value* k = b.input("k", {1, 2, Skv, 4});
  ir::Value* v = b.input("v", {1, 2, Skv, 4});
  ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
  s = b.op("Div", {s, b.constant("sqrt_d", scalar_f32(2.f))});
  ir::Value* mc = b.constant("mask", std::move(mask));
  ir::Value* masked = where ? b.op("Where", {mc, s, b.constant("fill", scalar_f32(fill))}) : b.op("Add", {s, mc});
  b.output(b.op("MatMul", {b.op("Softmax", {masked}, {attr_i("axis", -1)}), v}));
  return b.model();
}

std::vector<std::pair<std::string, Datum>> small_feeds(int64_t Sq, int64_t Skv) {
  return {{"q", feed({1, 2, Sq, 4}, 14)}, {"k", feed({1, 2, Skv, 4}, 15)}, {"v", feed({1, 2, Skv, 4}, 16)}};
}

Tensor tril_additive(int64_t rows, int64_t cols, float masked) {
  std::vector<float> v;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) v.push_back(j <= i + cols - rows ? 0.f : masked);
  return f32(v, {rows, cols});
}

TEST(AttentionFusionOptimizations, ConstantCausalMasksBecomeCausal) {
  struct Case {
    int64_t sq, skv;
    std::function<Tensor()> mask;
    bool where;
  };
  const std::vector<Case> cases = {
      {5, 5, [] { return tril_additive(5, 5, -10000.f); }, false},
      {5, 5, [] { return tril_additive(5, 5, -std::numeric_limits<float>::infinity()); }, false},
      {5, 5,
       [] {
         return tril_bool({1, 1}, 5, 5);
       },
       true},
      {3, 7,
       [] {
         return tril_bool({1, 1}, 3, 7);
       },
       true},                                            // chunk of queries at the end of the keys
      {1, 7, [] { return tril_bool({}, 1, 7); }, true},  // decode: one row, every key kept
  };
  for (const Case& c : cases) {
    auto build = [&] { return constant_mask_attention(c.sq, c.skv, c.mask(), c.where); };
    PassCheck r = check_pass(kPasses, build, small_feeds(c.sq, c.skv));
    EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
    EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.Attention", 1}}));
    ir::Model m = optimized(build);
    const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->num_inputs(), 3);
    EXPECT_EQ(a->attr_int("causal", -1), 1);
  }
}

TEST(AttentionFusionOptimizations, OtherConstantMasksStayMasks) {
  // Not causal: upper triangle, a mild additive bias (-100 is not "masked"), and an end-aligned lower
  // triangle with more queries than keys (rows without a key must stay uniform, not become zero).
  std::vector<bool> upper;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) upper.push_back(j >= i);
  struct Case {
    int64_t sq, skv;
    std::function<Tensor()> mask;
    bool where;
  };
  const std::vector<Case> cases = {
      {5, 5,
       [&] {
         return bools(upper, {5, 5});
       },
       true},
      {5, 5, [] { return tril_additive(5, 5, -100.f); }, false},
      {5, 3,
       [] {
         return tril_bool({1, 1}, 5, 3);
       },
       true},
  };
  for (const Case& c : cases) {
    auto build = [&] { return constant_mask_attention(c.sq, c.skv, c.mask(), c.where); };
    PassCheck r = check_pass(kPasses, build, small_feeds(c.sq, c.skv));
    EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
    ir::Model m = optimized(build);
    const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->num_inputs(), 4);
    EXPECT_EQ(a->attr_int("causal", -1), 0);
  }
}

// GPT-2 as transformers exports it: K/V = Concat(past, new) on the sequence axis, the causal mask
// sliced out of a constant lower-triangular buffer with bounds computed from the shapes,
// bias[:, :, k_len - q_len : k_len, :k_len], then Where(mask, scores, finfo.min).
ir::Model gpt2_attention(int64_t past, int64_t sq) {
  ModelBuilder b(14);
  const int64_t H = 2, D = 4, kMax = 16;
  ir::Value* q = b.input("q", {1, H, sq, D});
  ir::Value* k =
      b.op("Concat", {b.input("past_k", {1, H, past, D}), b.input("k", {1, H, sq, D})}, {attr_i("axis", -2)});
  ir::Value* v =
      b.op("Concat", {b.input("past_v", {1, H, past, D}), b.input("v", {1, H, sq, D})}, {attr_i("axis", -2)});
  ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
  s = b.op("Div", {s, b.constant("scale", scalar_f32(2.f))});
  ir::Value* two = b.constant("two", scalar_i64(2));
  ir::Value* q_len = b.op("Gather", {b.op("Shape", {q}), two}, {attr_i("axis", 0)});
  ir::Value* k_len = b.op("Gather", {b.op("Shape", {k}), two}, {attr_i("axis", 0)});
  ir::Value* axes0 = b.constant("axes0", i64({0}, {1}));
  ir::Value* start = b.op("Unsqueeze", {b.op("Sub", {k_len, q_len}), axes0});
  ir::Value* end = b.op("Unsqueeze", {k_len, axes0});
  ir::Value* bias = b.constant("attn.bias", tril_bool({1, 1}, kMax, kMax));
  ir::Value* rows =
      b.op("Slice", {bias, start, end, b.constant("ax2", i64({2}, {1})), b.constant("st1", i64({1}, {1}))});
  ir::Value* mask = b.op("Slice", {rows, b.constant("zero", i64({0}, {1})), end, b.constant("ax3", i64({3}, {1}))});
  ir::Value* w = b.op("Where", {mask, s, b.constant("mask_value", scalar_f32(kFloatMin))});
  b.output(b.op("MatMul", {b.op("Softmax", {w}, {attr_i("axis", -1)}), v}));
  b.output(k);  // present key
  return b.model();
}

TEST(AttentionFusionOptimizations, Gpt2DecodeAndPrefillSlicedCausalMask) {
  for (auto [past, sq] : {std::pair<int64_t, int64_t>{7, 1}, {0 + 5, 3}, {1, 6}}) {
    auto build = [&] { return gpt2_attention(past, sq); };
    PassCheck r = check_pass(kPasses, build,
                             {{"q", feed({1, 2, sq, 4}, 17)},
                              {"past_k", feed({1, 2, past, 4}, 18)},
                              {"k", feed({1, 2, sq, 4}, 19)},
                              {"past_v", feed({1, 2, past, 4}, 20)},
                              {"v", feed({1, 2, sq, 4}, 21)}});
    EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1) << "past " << past << " q " << sq;
    // The mask's Shape/Gather/Sub/Unsqueeze/Slice chain and K's Transpose are gone with it.
    EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Concat", 2}, {"sdx.Attention", 1}}));
    ir::Model m = optimized(build);
    const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->num_inputs(), 3);
    EXPECT_EQ(a->attr_int("causal", -1), 1);
  }
}

TEST(AttentionFusionOptimizations, CausalWhereThenPaddingAdd) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* q = b.input("q", {2, 2, 5, 4});
    ir::Value* k = b.input("k", {2, 2, 5, 4});
    ir::Value* v = b.input("v", {2, 2, 5, 4});
    ir::Value* pad = b.input("pad", {2, 1, 1, 5});
    ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
    s = b.op("Mul", {b.constant("c", scalar_f32(0.5f)), s});
    ir::Value* w =
        b.op("Where", {b.constant("tril", tril_bool({1, 1}, 5, 5)), s, b.constant("f", scalar_f32(kFloatMin))});
    b.output(b.op("MatMul", {b.op("Softmax", {b.op("Add", {w, pad})}), v}));
    return b.model();
  };
  Tensor pad = f32({0, 0, 0, 0, 0, 0, 0, 0, kFloatMin, kFloatMin}, {2, 1, 1, 5});
  PassCheck r = check_pass(kPasses, build,
                           {{"q", feed({2, 2, 5, 4}, 22)},
                            {"k", feed({2, 2, 5, 4}, 23)},
                            {"v", feed({2, 2, 5, 4}, 24)},
                            {"pad", Datum::tensor(pad)}});
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.Attention", 1}}));
  ir::Model m = optimized(build);
  const ir::Node* a = find_node(*m.graph, "Attention", "sdx");
  ASSERT_EQ(a->num_inputs(), 4);
  EXPECT_EQ(a->input(3)->name(), "pad");
  EXPECT_EQ(a->attr_int("causal", -1), 1);
}

TEST(AttentionFusionOptimizations, Float64) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* q = b.input("q", {1, 2, 3, 4}, DType::kFloat64);
    ir::Value* k = b.input("k", {1, 2, 3, 4}, DType::kFloat64);
    ir::Value* v = b.input("v", {1, 2, 3, 4}, DType::kFloat64);
    ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
    b.output(b.op("MatMul", {b.op("Softmax", {s}), v}));
    return b.model();
  };
  auto f64 = [](unsigned seed) {
    Tensor t = Tensor::allocate(DType::kFloat64, Shape{1, 2, 3, 4}).value();
    Tensor r = random_f32({1, 2, 3, 4}, seed);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = r.data<float>()[i];
    return Datum::tensor(t);
  };
  runtime::SessionOptions on;
  on.optimizer = only(kPasses);
  auto opt = runtime::Session::create(build(), on);
  ASSERT_TRUE(opt.is_ok()) << opt.status().to_string();
  EXPECT_EQ((*opt)->optimization().rewrites_of("AttentionFusionOptimizations"), 1);
  runtime::SessionOptions off;
  off.optimizer.enabled = false;
  auto ref = runtime::Session::create(build(), off);
  ASSERT_TRUE(ref.is_ok());
  std::vector<std::pair<std::string, Datum>> feeds = {{"q", f64(25)}, {"k", f64(26)}, {"v", f64(27)}};
  auto got = (*opt)->run(feeds);
  auto want = (*ref)->run(feeds);
  ASSERT_TRUE(got.is_ok() && want.is_ok());
  const Tensor& g = (*got)[0].as_tensor();
  const Tensor& w = (*want)[0].as_tensor();
  for (int64_t i = 0; i < g.numel(); ++i) EXPECT_NEAR(g.data<double>()[i], w.data<double>()[i], 1e-7);
}

// --- must not fuse -------------------------------------------------------------------------------------

TEST(AttentionFusionOptimizations, LeavesNonLastAxisSoftmaxAndSharedIntermediates) {
  auto softmax_axis2 = [] {
    ModelBuilder b;
    ir::Value* q = b.input("q", {1, 2, 4, 4});
    ir::Value* k = b.input("k", {1, 2, 4, 4});
    ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
    b.output(b.op("MatMul", {b.op("Softmax", {s}, {attr_i("axis", 2)}), b.input("v", {1, 2, 4, 4})}));
    return b.model();
  };
  auto probs_returned = [] {  // output_attentions=True
    ModelBuilder b;
    ir::Value* q = b.input("q", {1, 2, 4, 4});
    ir::Value* k = b.input("k", {1, 2, 4, 4});
    ir::Value* p = b.op("Softmax", {b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})})});
    b.output(b.op("MatMul", {p, b.input("v", {1, 2, 4, 4})}));
    b.output(p);
    return b.model();
  };
  auto scores_reused = [] {
    ModelBuilder b;
    ir::Value* q = b.input("q", {1, 2, 4, 4});
    ir::Value* k = b.input("k", {1, 2, 4, 4});
    ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
    b.output(b.op("MatMul", {b.op("Softmax", {s}), b.input("v", {1, 2, 4, 4})}));
    b.output(b.op("ReduceMax", {s}, {attr_ints("axes", {-1})}));
    return b.model();
  };
  std::vector<std::pair<std::string, Datum>> feeds = {
      {"q", feed({1, 2, 4, 4}, 28)}, {"k", feed({1, 2, 4, 4}, 29)}, {"v", feed({1, 2, 4, 4}, 30)}};
  for (const auto& build : {std::function<ir::Model()>(softmax_axis2), std::function<ir::Model()>(probs_returned),
                            std::function<ir::Model()>(scores_reused)}) {
    PassCheck r = check_pass(kPasses, build, feeds);
    EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 0);
    EXPECT_EQ(r.ops_after.count("sdx.Attention"), 0u);
  }
}

TEST(AttentionFusionOptimizations, LeavesBroadcastQueriesUnknownRanksAndTwoPlainMasks) {
  auto broadcast_q = [] {  // Q's batch 1 against K's batch 3: the output has batch 3, not Q's
    ModelBuilder b;
    ir::Value* q = b.input("q", {1, 2, 4, 4});
    ir::Value* k = b.input("k", {3, 2, 4, 4});
    ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
    b.output(b.op("MatMul", {b.op("Softmax", {s}), b.input("v", {3, 2, 4, 4})}));
    return b.model();
  };
  auto unknown_rank = [] {
    ModelBuilder b;
    ir::Value* q = b.graph().add_input("q", ir::TypeInfo::tensor(DType::kFloat32));
    ir::Value* k = b.input("k", {3, 2, 4, 4});
    ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
    b.output(b.op("MatMul", {b.op("Softmax", {s}), b.input("v", {3, 2, 4, 4})}));
    return b.model();
  };
  auto two_masks = [] {
    ModelBuilder b;
    ir::Value* q = b.input("q", {3, 2, 4, 4});
    ir::Value* k = b.input("k", {3, 2, 4, 4});
    ir::Value* s = b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})});
    s = b.op("Add", {b.op("Add", {s, b.input("m1", {4, 4})}), b.input("m2", {4, 4})});
    b.output(b.op("MatMul", {b.op("Softmax", {s}), b.input("v", {3, 2, 4, 4})}));
    return b.model();
  };
  for (const auto& build : {std::function<ir::Model()>(broadcast_q), std::function<ir::Model()>(unknown_rank),
                            std::function<ir::Model()>(two_masks)}) {
    ir::Model m = optimized(build);
    EXPECT_EQ(find_node(*m.graph, "Attention", "sdx"), nullptr);
    EXPECT_NE(find_node(*m.graph, "Softmax"), nullptr);
  }
  PassCheck r =
      check_pass(kPasses, broadcast_q,
                 {{"q", feed({1, 2, 4, 4}, 31)}, {"k", feed({3, 2, 4, 4}, 32)}, {"v", feed({3, 2, 4, 4}, 33)}});
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test

namespace sdx::test {
namespace {

// The paged form python/sdx/_paged_graph.py writes: K and V gathered from a slot pool by sdx.PagedConcat,
// then the exporter's attention (fused to sdx.Attention first); the K gather is also the present output.
ir::Model paged_attention_model() {
  ModelBuilder b(17);
  const int64_t H = 2, D = 4, P = 5, S = 1, slots = 12;
  ir::Value* q = b.input("q", {2, H, S, D});
  ir::Value* map = b.input("slot_map", {2, P}, DType::kInt64);
  ir::Value* k = b.op("PagedConcat", {b.input("k_cache", {H, slots, D}), map, b.input("k", {2, H, S, D})}, {}, 1, "sdx");
  ir::Value* v = b.op("PagedConcat", {b.input("v_cache", {H, slots, D}), map, b.input("v", {2, H, S, D})}, {}, 1, "sdx");
  ir::Value* s = b.op("Div", {b.op("MatMul", {q, b.op("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})})}),
                              b.constant("scale", f32({2.f}, {}))});
  s = b.op("Add", {s, b.input("mask", {2, 1, S, P + S})});
  b.output(b.op("MatMul", {b.op("Softmax", {s}, {attr_i("axis", -1)}), v}));
  b.output(k);  // present key
  return b.model();
}

TEST(AttentionFusionOptimizations, AttentionOverPagedConcatsBecomesPagedAttention) {
  Tensor mask = f32(std::vector<float>(12, 0.f), {2, 1, 1, 6});
  mask.data<float>()[6 + 4] = kFloatMin;  // sequence 1's last past slot is empty
  PassCheck r = check_pass(kPasses, paged_attention_model,
                           {{"q", feed({2, 2, 1, 4}, 31)},
                            {"slot_map", Datum::tensor(i64({3, 4, 5, 8, 9, 0, 1, 2, 6, -1}, {2, 5}))},
                            {"k_cache", feed({2, 12, 4}, 32)},
                            {"k", feed({2, 2, 1, 4}, 33)},
                            {"v_cache", feed({2, 12, 4}, 34)},
                            {"v", feed({2, 2, 1, 4}, 35)},
                            {"mask", Datum::tensor(mask)}});
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 2);  // fused, then paged
  // V's gather is gone; K's stays for the present output.
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.PagedAttention", 1}, {"sdx.PagedConcat", 1}}));
  ir::Model m = optimized(paged_attention_model);
  const ir::Node* a = find_node(*m.graph, "PagedAttention", "sdx");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->num_inputs(), 7);
  EXPECT_FLOAT_EQ(a->attr_float("scale", 0.f), 0.5f);
}

}  // namespace
}  // namespace sdx::test
