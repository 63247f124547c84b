// ConvResidualFusionOptimizations: Conv + Add(residual of the output's shape) [+ activation] becomes
// one sdx.FusedConv with a residual input. The fused kernel repeats the unfused arithmetic, so the
// checks are exact (rtol 0, atol 0); the pipeline test with BatchNormalization folding allows 1e-5.
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

constexpr const char* kPass = "ConvResidualFusionOptimizations";
constexpr const char* kEpilogue = "ConvEpilogueFusionOptimizations";

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -2.f, 2.f)); }

std::vector<ir::Attribute> pads1() { return {attr_ints("pads", {1, 1, 1, 1})}; }

// A ResNet basic block: Relu(Conv(Relu(Conv(x))) + x), 7 channels.
TEST(ConvResidualFusionOptimizations, BasicBlockBecomesTwoFusedConvs) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 7, 6, 5});
    ir::Value* h = b.op("Relu", {b.op("Conv", {x, b.constant("w1", random_f32({7, 7, 3, 3}, 1)),
                                               b.constant("b1", random_f32({7}, 2))},
                                         pads1())});
    ir::Value* c2 = b.op("Conv", {h, b.constant("w2", random_f32({7, 7, 3, 3}, 3)), b.constant("b2", random_f32({7}, 4))},
                         pads1());
    b.output(b.op("Relu", {b.op("Add", {c2, x})}));
    return b.model();
  };
  PassCheck r = check_pass({kEpilogue, kPass}, build, {{"x", feed({1, 7, 6, 5}, 1)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.FusedConv", 2}}));
}

// The downsampling shortcut: both Add operands are convolutions; the first takes the other as its
// residual. Operands in either order, no bias, no activation after the Add.
TEST(ConvResidualFusionOptimizations, DownsampleShortcutAndOperandOrder) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 4, 8, 8});
    ir::Value* c2 = b.op("Conv", {x, b.constant("w2", random_f32({6, 4, 3, 3}, 5))},
                         {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})});
    ir::Value* sc = b.op("Conv", {x, b.constant("wd", random_f32({6, 4, 1, 1}, 6)), b.constant("bd", random_f32({6}, 7))},
                         {attr_ints("strides", {2, 2})});
    ir::Value* y = b.op("Relu", {b.op("Add", {c2, sc})});
    // Residual first, a plain Conv after it, nothing after the Add.
    ir::Value* c3 = b.op("Conv", {y, b.constant("w3", random_f32({6, 6, 3, 3}, 8))}, pads1());
    b.output(b.op("Add", {y, c3}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({1, 4, 8, 8}, 2)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 2);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Conv", 1}, {"sdx.FusedConv", 2}}));
}

TEST(ConvResidualFusionOptimizations, SymbolicBatch) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.graph().add_input(
        "x", ir::TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbolic("N"), ir::Dim::fixed(3),
                                                                         ir::Dim::fixed(5), ir::Dim::fixed(5)}));
    ir::Value* c = b.op("Conv", {x, b.constant("w", random_f32({3, 3, 3, 3}, 9))}, pads1());
    b.output(b.op("LeakyRelu", {b.op("Add", {c, x})}, {attr_f("alpha", 0.2f)}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 3, 5, 5}, 3)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.FusedConv", 1}}));
}

TEST(ConvResidualFusionOptimizations, LeavesBroadcastsSharedOutputsAndActivatedConvsAlone) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 4, 5, 5});
    ir::Value* v = b.input("v", {1, 4, 1, 1});
    ir::Value* w = b.constant("w", random_f32({4, 4, 3, 3}, 10));
    // The residual broadcasts.
    b.output(b.op("Add", {b.op("Conv", {x, w}, pads1()), v}));
    // The Conv output is also read elsewhere.
    ir::Value* c2 = b.op("Conv", {x, w}, pads1());
    b.output(b.op("Add", {c2, x}));
    b.output(b.op("Sigmoid", {c2}));
    // The Conv output is a graph output.
    ir::Value* c3 = b.op("Conv", {x, w}, pads1());
    b.output(c3);
    b.output(b.op("Add", {c3, x}));
    // An activation comes first: Relu(Conv) + x, which becomes FusedConv(relu) + x.
    b.output(b.op("Add", {b.op("Relu", {b.op("Conv", {x, w}, pads1())}), x}));
    return b.model();
  };
  PassCheck r = check_pass({kEpilogue, kPass}, build, {{"x", feed({1, 4, 5, 5}, 4)}, {"v", feed({1, 4, 1, 1}, 5)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
  EXPECT_EQ(r.ops_after.at("Add"), 4);
}

// The torch export of a basic block: Conv + BatchNormalization throughout; the whole pipeline.
TEST(ConvResidualFusionOptimizations, ConvBatchNormBlockThroughThePipeline) {
  auto build = [] {
    ModelBuilder b(15);
    ir::Value* x = b.input("x", {1, 8, 6, 6});
    auto conv_bn = [&](ir::Value* in, const std::string& k, unsigned seed) {
      ir::Value* c = b.op("Conv", {in, b.constant("w" + k, random_f32({8, 8, 3, 3}, seed))}, pads1());
      return b.op("BatchNormalization",
                  {c, b.constant("s" + k, random_f32({8}, seed + 1, 0.5f, 2.f)),
                   b.constant("bb" + k, random_f32({8}, seed + 2)), b.constant("m" + k, random_f32({8}, seed + 3)),
                   b.constant("v" + k, random_f32({8}, seed + 4, 0.5f, 2.f))});
    };
    ir::Value* h = b.op("Relu", {conv_bn(x, "1", 11)});
    b.output(b.op("Relu", {b.op("Add", {conv_bn(h, "2", 21), x})}));
    return b.model();
  };
  PassCheck r = check_pass({"NormalizationFusionOptimizations", kEpilogue, kPass}, build, {{"x", feed({1, 8, 6, 6}, 6)}},
                           1e-5, 1e-5);
  EXPECT_EQ(r.report.rewrites_of(kPass), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.FusedConv", 2}}));
}

}  // namespace
}  // namespace sdx::test
