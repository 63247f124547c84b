// Conv and sdx.FusedConv on oneDNN (onednn_conv.h) against the reference im2col + gemm path
// (the same kernels with set_onednn_enabled(false)): strides, symmetric and asymmetric pads,
// dilations, groups and depthwise, odd channel counts, 1x1 / 3x3 / 7x7 kernels, batch 1 and 3,
// with and without bias and activation; the bound form against run(), bitwise; slicing over a
// 2-thread pool against one slice, bitwise. Built without oneDNN, the kernels run the reference
// on both sides and the OneDnnConv-level tests are skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/conv_gemm.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/onednn_conv.h"
#include "backend/cpu/thread_pool.h"
#include "kernels/fused_test_util.h"

namespace sdx::test {
namespace {

// Routes the kernels to oneDNN (or not) for the scope (never on when SDX_NO_ONEDNN=1); restores the switch after.
class ScopedOneDnn {
 public:
  explicit ScopedOneDnn(bool on) : before_(cpu::onednn_enabled()) { cpu::set_onednn_enabled(on && before_); }
  ~ScopedOneDnn() { cpu::set_onednn_enabled(before_); }

 private:
  bool before_;
};

// |got - want| <= tol * (1 + max |want|) elementwise: the two paths sum in different orders, so
// their difference scales with the magnitude of the terms, not of one (possibly cancelled) result.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol = 2e-6) {
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << got.type_string() << " vs " << want.type_string();
  double scale = 1;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, 1 + std::fabs(double(want.data<float>()[i])));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    if (!(std::fabs(g - w) <= tol * scale))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;
  std::vector<ir::Attribute> attrs;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"3x3 pad 1", {1, 16, 12, 12}, {32, 16, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}},
      {"7x7 stride 2 from 3 channels", {1, 3, 23, 23}, {16, 3, 7, 7}, {attr_ints("pads", {3, 3, 3, 3}), attr_ints("strides", {2, 2})}},
      {"1x1", {1, 24, 9, 9}, {40, 24, 1, 1}, {}},
      {"1x1 stride 2", {1, 32, 10, 10}, {48, 32, 1, 1}, {attr_ints("strides", {2, 2})}},
      {"odd channels 7 -> 17, asymmetric pads", {1, 7, 11, 9}, {17, 7, 3, 3}, {attr_ints("pads", {0, 1, 2, 1})}},
      {"odd channels 17 -> 3", {1, 17, 8, 8}, {3, 17, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}},
      {"dilation 2", {1, 16, 14, 14}, {16, 16, 3, 3}, {attr_ints("dilations", {2, 2}), attr_ints("pads", {2, 2, 2, 2})}},
      {"stride 2 x 1, rectangular kernel", {1, 8, 13, 10}, {24, 8, 3, 2}, {attr_ints("strides", {2, 1})}},
      {"groups 2", {1, 16, 10, 10}, {32, 8, 3, 3}, {attr_i("group", 2), attr_ints("pads", {1, 1, 1, 1})}},
      {"depthwise", {1, 32, 10, 10}, {32, 1, 3, 3}, {attr_i("group", 32), attr_ints("pads", {1, 1, 1, 1})}},
      {"batch 3", {3, 16, 9, 9}, {32, 16, 3, 3}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}},
      {"batch 3, 3 channels", {3, 3, 16, 16}, {16, 3, 3, 3}, {attr_s("auto_pad", "SAME_UPPER")}},
      {"large enough to slice by channels", {1, 64, 28, 28}, {64, 64, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}},
      {"few channels, sliced by rows", {1, 8, 40, 40}, {16, 8, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}},
      {"by rows, strided, asymmetric pads", {2, 3, 45, 41}, {16, 3, 5, 5},
       {attr_ints("pads", {0, 2, 3, 1}), attr_ints("strides", {2, 2})}},
  };
}

// Runs a node with oneDNN on and off.
Tensor run_with(bool onednn, const NodeSpec& spec) {
  ScopedOneDnn scope(onednn);
  auto y = run_single(spec);
  EXPECT_TRUE(y.is_ok()) << y.status().to_string();
  return y.is_ok() ? *y : Tensor();
}

TEST(OneDnnConv, ConvMatchesReference) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 1), w = random_tensor(DType::kFloat32, c.w, 2, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 3);
    for (bool bias : {false, true}) {
      const NodeSpec spec{.op = "Conv", .inputs = bias ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w},
                          .attrs = c.attrs};
      EXPECT_TRUE(close(run_with(true, spec), run_with(false, spec))) << (bias ? "with bias" : "without bias");
    }
  }
}

TEST(OneDnnConv, FusedConvMatchesReferenceForEveryActivation) {
  const std::vector<ConvCase> cases = conv_cases();
  for (const ActivationCase& a : all_activations()) {
    for (size_t i : {size_t{0}, size_t{4}, size_t{9}, size_t{10}}) {
      const ConvCase& c = cases[i];
      SCOPED_TRACE(a.name + ", " + c.name);
      const Tensor x = random_tensor(DType::kFloat32, c.x, 4), w = random_tensor(DType::kFloat32, c.w, 5, -0.5f, 0.5f);
      const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 6);
      std::vector<ir::Attribute> attrs = c.attrs;
      for (const ir::Attribute& at : a.fused_attrs()) attrs.push_back(at);
      const NodeSpec spec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b}, .attrs = attrs};
      EXPECT_TRUE(close(run_with(true, spec), run_with(false, spec), 1e-5));
    }
  }
}

// FusedConv on oneDNN still equals Conv on oneDNN followed by the ONNX activation, bit for bit
// (Relu / LeakyRelu / Clip as post-ops, the rest with sdx's functors).
TEST(OneDnnConv, FusedEqualsConvThenActivationBitwise) {
  const ConvCase c = conv_cases()[12];
  const Tensor x = random_tensor(DType::kFloat32, c.x, 7), w = random_tensor(DType::kFloat32, c.w, 8, -0.5f, 0.5f);
  const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 9);
  const Tensor y = must_run("Conv", {x, w, b}, c.attrs);
  for (const ActivationCase& a : all_activations()) {
    SCOPED_TRACE(a.name);
    std::vector<ir::Attribute> attrs = c.attrs;
    for (const ir::Attribute& at : a.fused_attrs()) attrs.push_back(at);
    auto fused = run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b}, .attrs = attrs});
    ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
    EXPECT_TRUE(same_bits(*fused, apply_activation(a, y)));
  }
}

TEST(OneDnnConv, BoundFormMatchesRunBitwise) {
  const HeapCheck heap = cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 10), w = random_tensor(DType::kFloat32, c.w, 11, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 12);
    if (cpu::onednn_enabled()) {
      // Constant weights (packed once in prepare) and weights that change between calls.
      expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w, b}, .attrs = c.attrs}, {1, 2}, heap);
      expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w}, .attrs = c.attrs}, {}, heap);
    } else {
      // The reference Conv replays through run().
      expect_no_bound_form(NodeSpec{.op = "Conv", .inputs = {x, w, b}, .attrs = c.attrs}, {1, 2});
    }
    std::vector<ir::Attribute> attrs = c.attrs;
    attrs.push_back(attr_s("activation", "relu"));
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b}, .attrs = attrs},
                         {1}, heap);
  }
}

TEST(OneDnnConv, ReferenceStaysForOtherRanksAndTypes) {
  // 1-D, 3-D and double run the reference whether oneDNN is on or not.
  const Tensor x1 = random_tensor(DType::kFloat32, {2, 3, 11}, 13), w1 = random_tensor(DType::kFloat32, {5, 3, 3}, 14);
  const NodeSpec one_d{.op = "Conv", .inputs = {x1, w1}, .attrs = {attr_ints("pads", {1, 1})}};
  EXPECT_TRUE(same_bits(run_with(true, one_d), run_with(false, one_d)));
  const Tensor xd = random_tensor(DType::kFloat64, {1, 4, 6, 6}, 15), wd = random_tensor(DType::kFloat64, {4, 4, 3, 3}, 16);
  const NodeSpec dbl{.op = "Conv", .inputs = {xd, wd}};
  EXPECT_TRUE(same_bits(run_with(true, dbl), run_with(false, dbl)));
}

// OneDnnConv itself: one slice without a pool, two slices (of output channels or of rows) under a
// 2-thread pool; the same bits, and close to the reference conv_forward.
TEST(OneDnnConv, SlicingOverThePoolKeepsTheBits) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  struct Case {
    std::vector<int64_t> x, w, pads, strides;
  };
  const std::vector<Case> cases = {
      {{1, 32, 20, 20}, {64, 32, 3, 3}, {1, 1, 1, 1}, {1, 1}},        // 4 blocks: by channels
      {{1, 32, 20, 20}, {72, 32, 3, 3}, {1, 1, 1, 1}, {1, 1}},        // a partial last block
      {{1, 32, 20, 20}, {17 * 16 + 3, 32, 3, 3}, {1, 1, 1, 1}, {1, 1}},
      {{1, 32, 20, 20}, {16, 32, 3, 3}, {1, 1, 1, 1}, {1, 1}},        // 1 block: by rows
      {{2, 3, 47, 33}, {16, 3, 7, 7}, {3, 2, 1, 3}, {2, 2}},          // by rows from NCHW input
      {{1, 24, 33, 30}, {8, 24, 3, 3}, {0, 1, 2, 1}, {2, 1}},         // by rows, uneven
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE("X " + Shape(cs.x).to_string() + " W " + Shape(cs.w).to_string());
    cpu::ConvAttrs attrs;
    attrs.pads = cs.pads;
    attrs.strides = cs.strides;
    const Shape xs(cs.x), ws(cs.w), bs{cs.w[0]};
    auto plan = cpu::ConvPlan::make(attrs, xs, ws, &bs, "Conv");
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    const Tensor x = random_tensor(DType::kFloat32, xs.dims(), 17), w = random_tensor(DType::kFloat32, ws.dims(), 18);
    const Tensor b = random_tensor(DType::kFloat32, bs.dims(), 19);
    for (const char* act_name : {"relu", "sigmoid"}) {
      SCOPED_TRACE(act_name);
      auto act = cpu::FusedActivation::make(act_name, {});
      ASSERT_TRUE(act.is_ok());
      Tensor y1 = fresh_tensor(DType::kFloat32, plan->out_shape, 0), y2 = fresh_tensor(DType::kFloat32, plan->out_shape, 0);

      auto one = cpu::OneDnnConv::make(*plan, *act, true);
      ASSERT_NE(one, nullptr);
      EXPECT_EQ(one->num_slices(), 1);
      ASSERT_TRUE(one->pack_weights(w.data<float>()).is_ok());
      ASSERT_TRUE(one->run(x.data<float>(), b.data<float>(), y1.data<float>()).is_ok());

      cpu::ThreadPool pool(2);
      cpu::ScopedThreadPool bind(&pool);
      auto two = cpu::OneDnnConv::make(*plan, *act, true);
      ASSERT_NE(two, nullptr);
      EXPECT_EQ(two->num_slices(), 2);
      ASSERT_TRUE(two->pack_weights(w.data<float>()).is_ok());
      ASSERT_TRUE(two->run(x.data<float>(), b.data<float>(), y2.data<float>()).is_ok());
      EXPECT_TRUE(same_bits(y2, y1));
      // Against the reference with Relu only: after a squashing activation the scale of close()
      // would no longer be the scale of the sums.
      if (std::string(act_name) != "relu") continue;
      Tensor ref = fresh_tensor(DType::kFloat32, plan->out_shape, 0);
      std::vector<float> col(static_cast<size_t>(plan->col_size())), wsb(static_cast<size_t>(plan->workspace_size()));
      act->visit([&](auto f) {
        cpu::conv_forward<float>(*plan, x.data<float>(), w.data<float>(), b.data<float>(), ref.data<float>(), col.data(),
                                 wsb.data(), f);
      });
      EXPECT_TRUE(close(y1, ref));
    }
  }
}

// Not an assertion: how many heap allocations one oneDNN-backed Conv call makes (oneDNN's
// execute builds a std::unordered_map of its arguments and a scratchpad grantor per primitive).
TEST(OneDnnConv, ReportsHeapAllocationsPerCall) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  cpu::ConvAttrs attrs;
  const Shape xs{1, 32, 12, 12}, ws{32, 32, 3, 3};
  auto plan = cpu::ConvPlan::make(attrs, xs, ws, nullptr, "Conv");
  ASSERT_TRUE(plan.is_ok());
  auto conv = cpu::OneDnnConv::make(*plan, cpu::FusedActivation(), false);
  ASSERT_NE(conv, nullptr);
  const Tensor x = random_tensor(DType::kFloat32, xs.dims(), 20), w = random_tensor(DType::kFloat32, ws.dims(), 21);
  Tensor y = fresh_tensor(DType::kFloat32, plan->out_shape, 0);
  ASSERT_TRUE(conv->pack_weights(w.data<float>()).is_ok());
  ASSERT_TRUE(conv->run(x.data<float>(), nullptr, y.data<float>()).is_ok());
  const uint64_t before = thread_heap_allocations();
  ASSERT_TRUE(conv->run(x.data<float>(), nullptr, y.data<float>()).is_ok());
  RecordProperty("heap_allocations_per_call", static_cast<int>(thread_heap_allocations() - before));
}

}  // namespace
}  // namespace sdx::test
