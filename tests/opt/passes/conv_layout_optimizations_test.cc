// ConvLayoutOptimizations: values passed only between 2-D float32 convolutions (dense or
// depthwise) become channel-blocked (NCHW16c); everything else keeps NCHW. Only the byte order between the
// convolutions changes, so the outputs are exact (rtol 0, atol 0).
#include <algorithm>

#include "../pass_test_util.h"
#include "ir/type_inference.h"
#include "opt/rewrite_util.h"

namespace sdx::test {
namespace {

constexpr const char* kPass = "ConvLayoutOptimizations";

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -2.f, 2.f)); }

std::vector<ir::Attribute> pads1() { return {attr_ints("pads", {1, 1, 1, 1})}; }

// The layout attributes of the optimized graph's convolutions, by output name.
std::map<std::string, std::string> layouts(const std::function<ir::Model()>& build) {
  ir::Model m = build();
  EXPECT_TRUE(ir::infer_types(*m.graph).is_ok());
  auto r = opt::optimize(*m.graph, only({"ConvEpilogueFusionOptimizations", "ConvResidualFusionOptimizations", kPass}));
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  std::map<std::string, std::string> out;
  for (const auto& n : m.graph->nodes()) {
    if (n->removed() || n->op_type() != "FusedConv") continue;
    out[n->output(0)->name()] = n->attr_string("input_layout", "NCHW") + "/" + n->attr_string("output_layout", "NCHW") +
                                "/" + n->attr_string("residual_layout", "NCHW");
  }
  return out;
}

// Conv -> Relu -> Conv -> Add(x) -> Relu -> Conv -> GlobalAveragePool: the block's inner tensor and
// its output are blocked; the graph input, the residual x and the tensor read by the pool are not.
ir::Model residual_block() {
  ModelBuilder b(13);
  ir::Value* x = b.input("x", {1, 16, 6, 6});
  ir::Value* h = b.op("Relu", {b.op("Conv", {x, b.constant("w1", random_f32({16, 16, 3, 3}, 1))}, pads1())});
  ir::Value* c2 = b.op("Conv", {h, b.constant("w2", random_f32({16, 16, 3, 3}, 2)), b.constant("b2", random_f32({16}, 3))},
                       pads1());
  ir::Value* y = b.op("Relu", {b.op("Add", {c2, x})});
  // A downsampling convolution without activation (a plain Conv until this pass) reads y.
  ir::Value* d = b.op("Conv", {y, b.constant("w3", random_f32({32, 16, 1, 1}, 4))}, {attr_ints("strides", {2, 2})});
  ir::Value* e = b.op("Conv", {d, b.constant("w4", random_f32({32, 32, 3, 3}, 5))}, pads1());
  b.output(b.op("GlobalAveragePool", {e}));
  return b.model();
}

TEST(ConvLayoutOptimizations, BlocksTensorsBetweenConvolutions) {
  PassCheck r = check_pass({"ConvEpilogueFusionOptimizations", "ConvResidualFusionOptimizations", kPass}, residual_block,
                           {{"x", feed({1, 16, 6, 6}, 1)}}, 0, 0);
  // Relu(Conv) -> y's block, y -> d, d -> e.
  EXPECT_EQ(r.report.rewrites_of(kPass), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"GlobalAveragePool", 1}, {"sdx.FusedConv", 4}}));
  const std::map<std::string, std::string> lay = layouts(residual_block);
  std::vector<std::string> got;
  for (const auto& [name, l] : lay) got.push_back(l);
  std::sort(got.begin(), got.end());
  // conv1: NCHW x in, blocked out; conv2 + residual: blocked in, blocked out, NCHW residual x;
  // the downsample: blocked in and out; the last: blocked in, NCHW out (read by the pool).
  EXPECT_EQ(got, (std::vector<std::string>{"NCHW/NCHW16c/NCHW", "NCHW16c/NCHW/NCHW", "NCHW16c/NCHW16c/NCHW",
                                           "NCHW16c/NCHW16c/NCHW"}));
}

// The residual read blocked: y feeds the next block's first convolution and its residual add.
TEST(ConvLayoutOptimizations, BlockedResidual) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 16, 5, 5});
    ir::Value* y = b.op("Relu", {b.op("Conv", {x, b.constant("w0", random_f32({16, 16, 3, 3}, 6))}, pads1())});
    ir::Value* h = b.op("Relu", {b.op("Conv", {y, b.constant("w1", random_f32({16, 16, 3, 3}, 7))}, pads1())});
    ir::Value* c2 = b.op("Conv", {h, b.constant("w2", random_f32({16, 16, 3, 3}, 8))}, pads1());
    b.output(b.op("Relu", {b.op("Add", {c2, y})}));
    return b.model();
  };
  PassCheck r = check_pass({"ConvEpilogueFusionOptimizations", "ConvResidualFusionOptimizations", kPass}, build,
                           {{"x", feed({1, 16, 5, 5}, 2)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 2);
  std::vector<std::string> got;
  for (const auto& [name, l] : layouts(build)) got.push_back(l);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"NCHW/NCHW16c/NCHW", "NCHW16c/NCHW/NCHW16c", "NCHW16c/NCHW16c/NCHW"}));
}

// The ResNet stem: Conv + Relu -> MaxPool -> a block reading the pool's output as X and as the
// residual; the pool runs blocked. A pool whose output feeds a non-convolution stays NCHW, and so
// does the value it reads.
TEST(ConvLayoutOptimizations, PoolsBetweenConvolutionsRunBlocked) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 3, 12, 12});
    ir::Value* s = b.op("Relu", {b.op("Conv", {x, b.constant("ws", random_f32({16, 3, 3, 3}, 13))}, pads1())});
    ir::Value* p = b.op("MaxPool", {s}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}),
                                         attr_ints("pads", {1, 1, 1, 1})});
    ir::Value* h = b.op("Relu", {b.op("Conv", {p, b.constant("w1", random_f32({16, 16, 3, 3}, 14))}, pads1())});
    ir::Value* c2 = b.op("Conv", {h, b.constant("w2", random_f32({16, 16, 3, 3}, 15))}, pads1());
    ir::Value* y = b.op("Relu", {b.op("Add", {c2, p})});
    ir::Value* a = b.op("AveragePool", {y}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    b.output(b.op("Sigmoid", {a}));
    return b.model();
  };
  PassCheck r = check_pass({"ConvEpilogueFusionOptimizations", "ConvResidualFusionOptimizations", kPass}, build,
                           {{"x", feed({1, 3, 12, 12}, 4)}}, 0, 0);
  // The stem's output, the pool's output and the block's inner tensor.
  EXPECT_EQ(r.report.rewrites_of(kPass), 3);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{
                             {"AveragePool", 1}, {"Sigmoid", 1}, {"sdx.BlockedMaxPool", 1}, {"sdx.FusedConv", 3}}));
}

// A mobile CNN's chain: 1x1 -> depthwise 3x3 (group = channels) -> 1x1 stays blocked throughout; a
// depthwise convolution with a channel multiplier (two outputs per input channel) does not.
TEST(ConvLayoutOptimizations, DepthwiseConvolutionsRunBlocked) {
  auto build = [] {
    ModelBuilder b(14);
    ir::Value* x = b.input("x", {1, 16, 9, 9});
    ir::Value* e = b.op("HardSwish", {b.op("Conv", {x, b.constant("we", random_f32({32, 16, 1, 1}, 20))})});
    ir::Value* d = b.op("Relu", {b.op("Conv", {e, b.constant("wd", random_f32({32, 1, 3, 3}, 21)),
                                                b.constant("bd", random_f32({32}, 22))},
                                       {attr_i("group", 32), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})})});
    ir::Value* p = b.op("Conv", {d, b.constant("wp", random_f32({32, 32, 1, 1}, 23))});
    ir::Value* m = b.op("Conv", {p, b.constant("wm", random_f32({64, 1, 3, 3}, 24))}, {attr_i("group", 32), attr_ints("pads", {1, 1, 1, 1})});
    b.output(b.op("GlobalAveragePool", {m}));
    return b.model();
  };
  PassCheck r = check_pass({"ConvEpilogueFusionOptimizations", kPass}, build, {{"x", feed({1, 16, 9, 9}, 4)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 2);  // e and d; p feeds the multiplier convolution
  std::vector<std::string> got;
  for (const auto& [name, l] : layouts(build)) got.push_back(l);
  std::sort(got.begin(), got.end());
  // The multiplier convolution stays a plain Conv (no FusedConv to carry a layout).
  EXPECT_EQ(got, (std::vector<std::string>{"NCHW/NCHW16c/NCHW", "NCHW16c/NCHW/NCHW", "NCHW16c/NCHW16c/NCHW"}));
}

// Channel counts that are not multiples of 16 are padded: 1x1 16 -> 24 (HardSwish), depthwise 3x3 on 24
// channels, 1x1 24 -> 40, MaxPool, 1x3 40 -> 40, the last read by GlobalAveragePool. 24 and 40 become 32
// and 48 (zero weights and biases in the new rows and columns, the depthwise group count 32) and the
// results stay those of the unpadded graph.
TEST(ConvLayoutOptimizations, PadsChannelCountsToSixteen) {
  auto build = [] {
    ModelBuilder b(14);
    ir::Value* x = b.input("x", {1, 16, 9, 9});
    ir::Value* e = b.op("HardSwish", {b.op("Conv", {x, b.constant("we", random_f32({24, 16, 1, 1}, 30)),
                                                     b.constant("be", random_f32({24}, 31))})});
    ir::Value* d = b.op("Relu", {b.op("Conv", {e, b.constant("wd", random_f32({24, 1, 3, 3}, 32))},
                                       {attr_i("group", 24), attr_ints("pads", {1, 1, 1, 1})})});
    ir::Value* p = b.op("Conv", {d, b.constant("wp", random_f32({40, 24, 1, 1}, 33))});
    ir::Value* m = b.op("MaxPool", {p}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    ir::Value* q = b.op("Conv", {m, b.constant("wq", random_f32({40, 40, 1, 3}, 34))}, {attr_ints("pads", {0, 1, 0, 1})});
    b.output(b.op("GlobalAveragePool", {q}));
    return b.model();
  };
  PassCheck r = check_pass({"ConvEpilogueFusionOptimizations", kPass}, build, {{"x", feed({1, 16, 9, 9}, 5)}});
  // e, d, p, m: blocked, and each padded.
  EXPECT_EQ(r.report.rewrites_of(kPass), 8);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{
                             {"GlobalAveragePool", 1}, {"sdx.BlockedMaxPool", 1}, {"sdx.FusedConv", 4}}));
  ir::Model m = build();
  ASSERT_TRUE(ir::infer_types(*m.graph).is_ok());
  ASSERT_TRUE(opt::optimize(*m.graph, only({"ConvEpilogueFusionOptimizations", kPass})).is_ok());
  std::vector<std::string> got;
  for (const auto& n : m.graph->nodes()) {
    if (n->removed() || n->op_type() == "GlobalAveragePool") continue;
    const Tensor* w = n->op_type() == "FusedConv" ? opt::constant_value(n->input(1)) : nullptr;
    got.push_back(n->op_type() + " " + n->output(0)->type().shape_string() +
                  (w ? " W" + w->shape().to_string() + " group " + std::to_string(n->attr_int("group", 1)) : ""));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"FusedConv [1, 32, 9, 9] W[32, 16, 1, 1] group 1",
                                           "FusedConv [1, 32, 9, 9] W[32, 1, 3, 3] group 32",
                                           "FusedConv [1, 48, 9, 9] W[48, 32, 1, 1] group 1",
                                           "BlockedMaxPool [1, 48, 4, 4]",
                                           "FusedConv [1, 40, 4, 4] W[40, 48, 1, 3] group 1"}));
}

// No padding where it cannot be done or would not pay: a weight computed by the graph (here a graph
// input), 6 channels (padding to 16 would more than double the reader's work), a depthwise convolution
// whose output feeds a non-convolution.
TEST(ConvLayoutOptimizations, PadsOnlyConstantWeightsAndModestGrowth) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 16, 6, 6});
    ir::Value* wx = b.input("wx", {24, 24, 1, 1});
    ir::Value* c1 = b.op("Conv", {x, b.constant("w1", random_f32({24, 16, 1, 1}, 40))});
    b.output(b.op("Conv", {c1, wx}));
    ir::Value* c2 = b.op("Conv", {x, b.constant("w2", random_f32({6, 16, 1, 1}, 41))});
    b.output(b.op("Conv", {c2, b.constant("w3", random_f32({16, 6, 3, 3}, 42))}));
    ir::Value* c3 = b.op("Conv", {x, b.constant("w4", random_f32({24, 16, 1, 1}, 43))});
    b.output(b.op("Sigmoid", {b.op("Conv", {c3, b.constant("w5", random_f32({24, 1, 3, 3}, 44))}, {attr_i("group", 24)})}));
    return b.model();
  };
  PassCheck r = check_pass({"ConvEpilogueFusionOptimizations", kPass}, build,
                           {{"x", feed({1, 16, 6, 6}, 6)}, {"wx", feed({24, 24, 1, 1}, 7)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
}

TEST(ConvLayoutOptimizations, LeavesOtherReadersChannelCountsGroupsAndOutputsAlone) {
  auto build = [] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", {1, 16, 6, 6});
    ir::Value* w = b.constant("w", random_f32({16, 16, 3, 3}, 9));
    // Read by a convolution and by a Sigmoid.
    ir::Value* c1 = b.op("Relu", {b.op("Conv", {x, w}, pads1())});
    b.output(b.op("Conv", {c1, w}, pads1()));
    b.output(b.op("Sigmoid", {c1}));
    // A graph output that a convolution also reads.
    ir::Value* c2 = b.op("Conv", {x, w}, pads1());
    b.output(c2);
    b.output(b.op("Conv", {c2, w}, pads1()));
    // 8 channels.
    ir::Value* c3 = b.op("Conv", {x, b.constant("w8", random_f32({8, 16, 3, 3}, 10))}, pads1());
    b.output(b.op("Conv", {c3, b.constant("w88", random_f32({8, 8, 3, 3}, 11))}, pads1()));
    // Grouped.
    ir::Value* c4 = b.op("Conv", {x, w}, pads1());
    b.output(b.op("Conv", {c4, b.constant("wg", random_f32({16, 8, 3, 3}, 12))}, {attr_i("group", 2)}));
    return b.model();
  };
  PassCheck r = check_pass({"ConvEpilogueFusionOptimizations", kPass}, build, {{"x", feed({1, 16, 6, 6}, 3)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
}

}  // namespace
}  // namespace sdx::test
