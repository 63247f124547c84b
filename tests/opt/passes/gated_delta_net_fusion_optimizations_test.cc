// GatedDeltaNetFusionOptimizations: gated linear units become sdx.GatedLinearUnit. The fused
// kernel repeats the unfused arithmetic, so the check is exact (rtol 0, atol 0).
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

constexpr const char* kPass = "GatedDeltaNetFusionOptimizations";

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -3.f, 3.f)); }

TEST(GatedDeltaNetFusionOptimizations, SwiGluGegluAndWrittenOutSilu) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {2, 5, 8});
    auto proj = [&](const std::string& k, unsigned seed) {
      return b.op("MatMul", {x, b.constant("w" + k, random_f32({8, 12}, seed))});
    };
    // Llama: Mul(Swish(x W1), x W3)
    b.output(b.op("Mul", {b.op("Swish", {proj("1", 1)}, {}, 1, "", 24), proj("3", 3)}));
    // T5 v1.1 GEGLU, gate on the right: Mul(x W2, Gelu(x W4))
    b.output(b.op("Mul", {proj("2", 2), b.op("Gelu", {proj("4", 4)}, {attr_s("approximate", "tanh")}, 1, "", 20)}));
    // SiLU written out: Mul(Mul(a, Sigmoid(a)), b)
    ir::Value* a = proj("5", 5);
    b.output(b.op("Mul", {b.op("Mul", {a, b.op("Sigmoid", {a})}), proj("6", 6)}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 5, 8}, 1)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"MatMul", 6}, {"sdx.GatedLinearUnit", 3}}));
}

TEST(GatedDeltaNetFusionOptimizations, SplitHalvesForm) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {3, 8});
    ir::Value* h = b.op("MatMul", {x, b.constant("w", random_f32({8, 20}, 7))});
    ir::Node* split = nullptr;
    b.op("Split", {h, b.constant("sizes", i64({10, 10}, {2}))}, {attr_i("axis", -1)}, 2);
    split = b.last_node();
    b.output(b.op("Mul", {b.op("Gelu", {split->output(0)}, {}, 1, "", 20), split->output(1)}));
    // Split by attribute (opset 11) along axis 0 of a [4, 6] input.
    ir::Value* z = b.input("z", {4, 6});
    b.op("Split", {z}, {attr_i("axis", 0), attr_ints("split", {2, 2})}, 2, "", 11);
    ir::Node* split2 = b.last_node();
    b.output(b.op("Mul", {split2->output(1), b.op("Swish", {split2->output(0)}, {}, 1, "", 24)}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({3, 8}, 2)}, {"z", feed({4, 6}, 3)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 2);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"MatMul", 1}, {"sdx.GatedLinearUnit", 2}}));
}

TEST(GatedDeltaNetFusionOptimizations, LeavesSiluSqueezeExcitationAndSharedGatesAlone) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {1, 4, 5, 5});
    ir::Value* s = b.input("s", {1, 4, 1, 1});
    // SiLU is not a gate.
    b.output(b.op("Mul", {x, b.op("Sigmoid", {x})}));
    // Squeeze-excitation: the gate broadcasts, fusing would repeat the Sigmoid per element.
    b.output(b.op("Mul", {x, b.op("Sigmoid", {s})}));
    // The gate value is read elsewhere too.
    ir::Value* y = b.input("y", {1, 4, 5, 5});
    ir::Value* g = b.op("Relu", {y});
    b.output(b.op("Mul", {g, x}));
    b.output(g);
    return b.model();
  };
  PassCheck r = check_pass(
      {kPass}, build, {{"x", feed({1, 4, 5, 5}, 4)}, {"s", feed({1, 4, 1, 1}, 5)}, {"y", feed({1, 4, 5, 5}, 6)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
}

}  // namespace
}  // namespace sdx::test
