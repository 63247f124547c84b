// HorizontalFusionOptimizations: merged groups are checked for the rewrite count and the resulting ops,
// and through check_pass for the same outputs as the unoptimized session on random inputs within
// |opt - ref| <= 1e-6 + 1e-5 |ref|.
#include "../pass_test_util.h"
#include "ir/type_inference.h"
#include "opt/rewrite_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"HorizontalFusionOptimizations"};

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed)); }

// x [2, 5, 8] projected by MatMuls with weights [8, n_i] (each + a bias [n_i] where with_bias[i]).
ir::Model projections(const std::vector<int64_t>& n, const std::vector<bool>& with_bias, int opset = 17) {
  ModelBuilder b(opset);
  ir::Value* x = b.input("x", {2, 5, 8});
  for (size_t i = 0; i < n.size(); ++i) {
    ir::Value* y = b.op("MatMul", {x, b.constant("w" + std::to_string(i), random_f32({8, n[i]}, 40 + unsigned(i)))});
    if (with_bias[i]) {
      ir::Value* bias = b.constant("b" + std::to_string(i), random_f32({n[i]}, 50 + unsigned(i)));
      y = i % 2 ? b.op("Add", {bias, y}) : b.op("Add", {y, bias});
    }
    b.output(b.op("Relu", {y}));
  }
  return b.model();
}

TEST(HorizontalFusionOptimizations, QkvProjectionsWithBiases) {
  auto build = [] { return projections({8, 8, 8}, {true, true, true}); };
  PassCheck r = check_pass(kPasses, build, {{"x", feed({2, 5, 8}, 1)}});
  EXPECT_EQ(r.report.rewrites_of("HorizontalFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"MatMul", 1}, {"Relu", 3}, {"Split", 1}}));
}

TEST(HorizontalFusionOptimizations, TwoMatMulsOfDifferentWidthsWithoutBias) {
  auto build = [] { return projections({3, 7}, {false, false}); };
  PassCheck r = check_pass(kPasses, build, {{"x", feed({2, 5, 8}, 2)}});
  EXPECT_EQ(r.report.rewrites_of("HorizontalFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"MatMul", 1}, {"Relu", 2}, {"Split", 1}}));
}

TEST(HorizontalFusionOptimizations, MixedBiasesMergeOnlyTheMatMuls) {
  // Whisper's K projection has no bias: the matmuls merge, the two Adds stay on the split outputs.
  auto build = [] { return projections({8, 8, 8}, {true, false, true}); };
  PassCheck r = check_pass(kPasses, build, {{"x", feed({2, 5, 8}, 3)}});
  EXPECT_EQ(r.report.rewrites_of("HorizontalFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 2}, {"MatMul", 1}, {"Relu", 3}, {"Split", 1}}));
}

TEST(HorizontalFusionOptimizations, OldOpsetModelGetsAnOpset18Split) {
  auto build = [] { return projections({4, 4}, {true, true}, /*opset=*/11); };
  PassCheck r = check_pass(kPasses, build, {{"x", feed({2, 5, 8}, 4)}});
  EXPECT_EQ(r.report.rewrites_of("HorizontalFusionOptimizations"), 1);
  ir::Model m = build();
  ASSERT_TRUE(ir::infer_types(*m.graph).is_ok());
  ASSERT_TRUE(opt::optimize(*m.graph, only(kPasses)).is_ok());
  for (const auto& n : m.graph->nodes())
    if (n->op_type() == "Split") {
      EXPECT_EQ(n->opset(), 18);
      ASSERT_EQ(n->num_inputs(), 2);
      EXPECT_EQ(n->input(1)->initializer().data<int64_t>()[1], 4);
    }
}

TEST(HorizontalFusionOptimizations, GraphOutputsKeepTheirNames) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4, 8});
    ir::Value* q = b.op("MatMul", {x, b.constant("wq", random_f32({8, 6}, 5))});
    ir::Value* k = b.op("MatMul", {x, b.constant("wk", random_f32({8, 2}, 6))});
    b.output(q);
    b.output(k);
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"x", feed({4, 8}, 7)}});
  EXPECT_EQ(r.report.rewrites_of("HorizontalFusionOptimizations"), 1);
  ir::Model m = build();
  const std::string q_name = m.graph->outputs()[0]->name(), k_name = m.graph->outputs()[1]->name();
  ASSERT_TRUE(ir::infer_types(*m.graph).is_ok());
  ASSERT_TRUE(opt::optimize(*m.graph, only(kPasses)).is_ok());
  EXPECT_EQ(m.graph->outputs()[0]->name(), q_name);
  EXPECT_EQ(m.graph->outputs()[1]->name(), k_name);
  EXPECT_EQ(m.graph->outputs()[0]->producer()->op_type(), "Split");
}

TEST(HorizontalFusionOptimizations, LeavesLoneDynamicAndMismatchedMatMuls) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4, 8});
    ir::Value* w_dyn = b.input("w_dyn", {8, 3});
    b.output(b.op("MatMul", {x, b.constant("w", random_f32({8, 3}, 8))}));  // alone among constant weights
    b.output(b.op("MatMul", {x, w_dyn}));                                   // weight not a constant
    b.output(b.op("MatMul", {b.constant("c", random_f32({4, 8}, 9)), b.input("y", {8, 2})}));
    ir::Value* x3 = b.input("x3", {2, 4, 8});
    b.output(b.op("MatMul", {x3, b.constant("w3", random_f32({2, 8, 3}, 10))}));  // 3-D weights
    b.output(b.op("MatMul", {x3, b.constant("w4", random_f32({2, 8, 3}, 11))}));
    return b.model();
  };
  PassCheck r = check_pass(
      kPasses, build,
      {{"x", feed({4, 8}, 12)}, {"w_dyn", feed({8, 3}, 13)}, {"y", feed({8, 2}, 14)}, {"x3", feed({2, 4, 8}, 15)}});
  EXPECT_EQ(r.report.rewrites_of("HorizontalFusionOptimizations"), 0);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"MatMul", 5}}));
}

TEST(HorizontalFusionOptimizations, AfterAttentionFusionTheQkvProjectionsStillMerge) {
  // Encoder self-attention: attention fusion (1500) first, then the three projections merge (1600).
  auto build = [] {
    ModelBuilder b;
    const int64_t S = 6, H = 2, D = 4, hid = 8;
    ir::Value* x = b.input("x", {1, S, hid});
    ir::Value* split = b.constant("split", i64({1, S, H, D}, {4}));
    auto heads = [&](const char* name, std::vector<int64_t> perm, unsigned seed) {
      ir::Value* w = b.constant(std::string("w") + name, random_f32({hid, hid}, seed));
      ir::Value* bias = b.constant(std::string("b") + name, random_f32({hid}, seed + 10));
      ir::Value* r = b.op("Reshape", {b.op("Add", {b.op("MatMul", {x, w}), bias}), split});
      return b.op("Transpose", {r}, {attr_ints("perm", std::move(perm))});
    };
    ir::Value* q = heads("q", {0, 2, 1, 3}, 21);
    ir::Value* k = heads("k", {0, 2, 3, 1}, 22);
    ir::Value* v = heads("v", {0, 2, 1, 3}, 23);
    ir::Value* s = b.op("Div", {b.op("MatMul", {q, k}), b.constant("sqrt_d", f32({2.f}, {}))});
    ir::Value* ctx = b.op("MatMul", {b.op("Softmax", {s}, {attr_i("axis", -1)}), v});
    b.output(b.op("Transpose", {ctx}, {attr_ints("perm", {0, 2, 1, 3})}));
    return b.model();
  };
  PassCheck r = check_pass({"AttentionFusionOptimizations", "HorizontalFusionOptimizations"}, build,
                           {{"x", feed({1, 6, 8}, 16)}});
  EXPECT_EQ(r.report.rewrites_of("AttentionFusionOptimizations"), 1);
  EXPECT_EQ(r.report.rewrites_of("HorizontalFusionOptimizations"), 1);
  EXPECT_EQ(r.ops_after["sdx.Attention"], 1);
  EXPECT_EQ(r.ops_after["MatMul"], 1);
  EXPECT_EQ(r.ops_after["Split"], 1);
}

}  // namespace
}  // namespace sdx::test
