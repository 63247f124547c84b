// ConvEpilogueFusionOptimizations: Conv [+ per-channel bias] [+ activation] becomes one Conv or
// sdx.FusedConv. The fused kernel repeats the unfused arithmetic, so the check is exact (rtol 0,
// atol 0); the pipeline test with BatchNormalization folding allows rtol 1e-5, atol 1e-5.
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

constexpr const char* kPass = "ConvEpilogueFusionOptimizations";

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -2.f, 2.f)); }

TEST(ConvEpilogueFusionOptimizations, BiasAndActivationForms) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    auto conv = [&](const std::string& k, bool bias) {
      std::vector<ir::Value*> in = {x, b.constant("w" + k, random_f32({4, 3, 3, 3}, 1))};
      if (bias) in.push_back(b.constant("b" + k, random_f32({4}, 2)));
      return b.op("Conv", in, {attr_ints("pads", {1, 1, 1, 1})});
    };
    b.output(b.op("Relu", {conv("1", true)}));
    // Conv without bias + Add([1, M, 1, 1]) + relu6
    ir::Value* a2 = b.op("Add", {conv("2", false), b.constant("c2", random_f32({1, 4, 1, 1}, 3))});
    b.output(b.op("Clip", {a2, b.constant("lo", f32({0.f}, {})), b.constant("hi", f32({6.f}, {}))}));
    // Add([M, 1, 1]) alone: a plain Conv with bias
    b.output(b.op("Add", {b.constant("c3", random_f32({4, 1, 1}, 4)), conv("3", false)}));
    b.output(b.op("HardSwish", {conv("4", true)}, {}, 1, "", 14));
    b.output(b.op("LeakyRelu", {conv("5", false)}, {attr_f("alpha", 0.1f)}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({1, 3, 8, 8}, 1)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 5);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Conv", 1}, {"sdx.FusedConv", 4}}));
}

TEST(ConvEpilogueFusionOptimizations, LeavesSharedOutputsAndOtherBroadcastsAlone) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 2, 5, 5});
    ir::Value* w = b.constant("w", random_f32({2, 2, 1, 1}, 5));
    // The Conv output is read twice.
    ir::Value* c1 = b.op("Conv", {x, w});
    b.output(b.op("Relu", {c1}));
    b.output(c1);
    // Add of a [M] vector broadcasts along the last spatial axis, not the channels.
    b.output(b.op("Add", {b.op("Conv", {x, w}), b.constant("v", random_f32({5}, 6))}));
    // A Conv with its own bias: a second bias add would round differently.
    ir::Value* c3 = b.op("Conv", {x, w, b.constant("b", random_f32({2}, 7))});
    b.output(b.op("Add", {c3, b.constant("c", random_f32({1, 2, 1, 1}, 8))}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({1, 2, 5, 5}, 2)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
  EXPECT_EQ(r.ops_after.count("sdx.FusedConv"), 0u);
}

// A Max / Min with a scalar constant or a constant Clip after Relu / LeakyRelu joins the FusedConv as
// its activation_clamp (openWakeWord: Max(LeakyRelu(BN(Conv)), -0.4)); not a zero constant first
// (Max(0, -0) is +0), not after another activation, not a non-scalar.
TEST(ConvEpilogueFusionOptimizations, ClampAfterReluOrLeakyReluJoins) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    auto conv = [&](const std::string& k) {
      return b.op("Conv", {x, b.constant("w" + k, random_f32({4, 3, 3, 3}, 20)), b.constant("b" + k, random_f32({4}, 21))},
                  {attr_ints("pads", {1, 1, 1, 1})});
    };
    ir::Value* lr = b.op("LeakyRelu", {conv("1")}, {attr_f("alpha", 0.2f)});
    b.output(b.op("Max", {lr, b.constant("c1", f32({-0.4f}, {}))}));                        // joins
    b.output(b.op("Min", {b.constant("c2", f32({0.5f}, {1})), b.op("Relu", {conv("2")})}));  // joins
    b.output(b.op("Clip", {b.op("Relu", {conv("3")}), b.constant("lo", f32({0.1f}, {})), b.constant("hi", f32({2.f}, {}))}));  // joins
    b.output(b.op("Max", {b.constant("z", f32({0.f}, {})), b.op("Relu", {conv("4")})}));     // zero first: stays
    b.output(b.op("Max", {b.op("Sigmoid", {conv("5")}), b.constant("c5", f32({0.6f}, {}))}));  // after Sigmoid: stays
    b.output(b.op("Max", {b.op("Relu", {conv("6")}), b.constant("c6", random_f32({1, 4, 1, 1}, 22))}));  // per channel: stays
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({1, 3, 8, 8}, 4)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 6);
  // The Min, the Clip and the first Max are gone into their FusedConvs.
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.FusedConv", 6}, {"Max", 3}}));
}

// A Mul by and / or an Add of scalar constants after HardSwish or Relu joins the FusedConv as its
// activation_affine (PP-LCNetV3's learnable affine block in PP-OCRv4), bitwise; not after another
// activation, not a per-channel constant.
TEST(ConvEpilogueFusionOptimizations, AffineAfterHardSwishOrReluJoins) {
  auto build = [] {
    ModelBuilder b(14);
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    auto conv = [&](const std::string& k) {
      return b.op("Conv", {x, b.constant("w" + k, random_f32({4, 3, 3, 3}, 30)), b.constant("b" + k, random_f32({4}, 31))},
                  {attr_ints("pads", {1, 1, 1, 1})});
    };
    auto c = [&](const std::string& k, float v) { return b.constant(k, f32({v}, {1})); };
    ir::Value* hs = b.op("HardSwish", {conv("1")});
    b.output(b.op("Add", {b.op("Mul", {c("a1", 1.3f), hs}), c("s1", -0.2f)}));  // joins: Mul and Add
    b.output(b.op("Mul", {b.op("Relu", {conv("2")}), c("a2", 0.7f)}));            // joins: Mul alone
    b.output(b.op("Add", {c("s3", 0.5f), b.op("HardSwish", {conv("3")})}));       // joins: Add alone
    b.output(b.op("Add", {b.op("Mul", {b.op("Sigmoid", {conv("4")}), c("a4", 2.f)}), c("s4", 1.f)}));  // stays
    b.output(b.op("Mul", {b.op("HardSwish", {conv("5")}), b.constant("a5", random_f32({1, 4, 1, 1}, 32))}));  // stays
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({1, 3, 8, 8}, 5)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 5);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.FusedConv", 5}, {"Mul", 2}, {"Add", 1}}));
}

TEST(ConvEpilogueFusionOptimizations, ConvBatchNormSiluBecomesOneFusedConv) {
  // The YOLO block: Conv -> BatchNormalization -> x * Sigmoid(x).
  auto build = [] {
    ModelBuilder b(15);
    ir::Value* x = b.input("x", {1, 3, 6, 6});
    ir::Value* c = b.op("Conv", {x, b.constant("w", random_f32({8, 3, 3, 3}, 9))}, {attr_ints("pads", {1, 1, 1, 1})});
    ir::Value* n = b.op("BatchNormalization",
                        {c, b.constant("s", random_f32({8}, 10, 0.5f, 2.f)), b.constant("bb", random_f32({8}, 11)),
                         b.constant("m", random_f32({8}, 12)), b.constant("v", random_f32({8}, 13, 0.5f, 2.f))});
    b.output(b.op("Mul", {n, b.op("Sigmoid", {n})}));
    return b.model();
  };
  PassCheck r = check_pass({"NormalizationFusionOptimizations", "ActivationFusionOptimizations", kPass}, build,
                           {{"x", feed({1, 3, 6, 6}, 3)}}, 1e-5, 1e-5);
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.FusedConv", 1}}));
}

}  // namespace
}  // namespace sdx::test
