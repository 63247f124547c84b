// Conv and sdx.FusedConv on oneDNN (onednn_conv.h) against the reference im2col + gemm path
// (the same kernels with set_onednn_enabled(false)): strides, symmetric and asymmetric pads,
// dilations, groups and depthwise, odd channel counts, 1x1 / 3x3 / 7x7 kernels, batch 1 and 3,
// with and without bias and activation, with a residual (FusedConv's 4th input); channel-blocked
// X / Y / R (NCHW16c) against the NCHW bits, on oneDNN and on the reference; the bound form against
// run() at the same pool size, bitwise; slicing over a 2-thread pool against one slice, bitwise on
// the direct kernels, close under Winograd (whose 3x3 stride-1 cases above run Winograd). Built without oneDNN, the kernels run the reference
// on both sides and the OneDnnConv-level tests are skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/cpu/onednn/onednn.h"
#include "backend/cpu/onednn/onednn_conv.h"
#include "backend/cpu/threading/thread_pool.h"
#include "../kernels/fused_test_util.h"

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

// Turns Winograd off (or on) for the scope; restores the switch after.
class ScopedWinograd {
 public:
  explicit ScopedWinograd(bool on) : before_(cpu::winograd_enabled()) { cpu::set_winograd_enabled(on); }
  ~ScopedWinograd() { cpu::set_winograd_enabled(before_); }

 private:
  bool before_;
};

// Binds a pool of the size run_node's sessions use, so that prepare() slices like their run().
struct SessionSizedPool {
  cpu::ThreadPool pool{cpu::ThreadPool::default_num_threads()};
  cpu::ScopedThreadPool bind{&pool};
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
      // k x 1 over H x 1 planes runs as 1 x k over 1 x H (onednn_conv.cc's make()).
      {"5x1 over a column", {1, 32, 40, 1}, {48, 32, 5, 1}, {}},
      {"3x1 over a column, strided, padded", {2, 16, 31, 1}, {16, 16, 3, 1},
       {attr_ints("pads", {1, 0, 2, 0}), attr_ints("strides", {2, 1}), attr_ints("dilations", {2, 1})}},
      // 1-D of at least 2^20 multiply-adds runs as 2-D over 1 x W planes.
      {"1-D, large enough for oneDNN", {1, 64, 300}, {48, 64, 5}, {attr_ints("pads", {2, 1})}},
      {"1-D, strided, dilated", {2, 32, 301}, {40, 32, 3}, {attr_ints("strides", {2}), attr_ints("dilations", {3}), attr_ints("pads", {3, 0})}},
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
// (LeakyRelu as a post-op, the rest with sdx's functors).
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

// X with NaN and infinities: on the direct kernels (the Winograd cases are off here) every activation
// leaves NaN and infinities exactly where the reference path has them (oneDNN's own Relu and Clip
// would turn NaN into 0, so they run in sdx's epilogue), and FusedConv equals Conv + activation bit
// for bit, NaN where it has NaN (same_bits_nan_as_nan).
TEST(OneDnnConv, ActivationsKeepNaNAndInfinities) {
  ScopedWinograd no_winograd(false);
  const std::vector<ConvCase> cases = conv_cases();
  for (size_t i : {size_t{0}, size_t{4}, size_t{10}, size_t{13}}) {
    const ConvCase& c = cases[i];
    Tensor x = random_tensor(DType::kFloat32, c.x, 44);
    for (int64_t k = 5; k < x.numel(); k += 211)
      x.data<float>()[k] = (k % 3 == 0) ? NAN : (k % 3 == 1) ? INFINITY : -NAN;
    const Tensor w = random_tensor(DType::kFloat32, c.w, 45, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 46);
    const Tensor y = must_run("Conv", {x, w, b}, c.attrs);
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(c.name + ", " + a.name);
      std::vector<ir::Attribute> attrs = c.attrs;
      for (const ir::Attribute& at : a.fused_attrs()) attrs.push_back(at);
      const NodeSpec spec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b}, .attrs = attrs};
      const Tensor on = run_with(true, spec), off = run_with(false, spec);
      int64_t nans = 0;
      for (int64_t k = 0; k < on.numel(); ++k) {
        const float g = on.data<float>()[k], r = off.data<float>()[k];
        ASSERT_EQ(std::isnan(g), std::isnan(r)) << "element " << k << ": got " << g << ", want " << r;
        ASSERT_EQ(std::isinf(g), std::isinf(r)) << "element " << k << ": got " << g << ", want " << r;
        nans += std::isnan(r);
      }
      EXPECT_GT(nans, 0);
      EXPECT_TRUE(same_bits_nan_as_nan(on, apply_activation(a, y)));
    }
  }
}

// With a residual R: every case (channel and row slicing, odd channel counts, groups, batch 3)
// against the reference, and bit for bit against oneDNN's Conv followed by Add and the activation.
TEST(OneDnnConv, ResidualMatchesReferenceAndConvAddActivation) {
  for (const ConvCase& c : conv_cases()) {
    const Tensor x = random_tensor(DType::kFloat32, c.x, 40), w = random_tensor(DType::kFloat32, c.w, 41, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 42);
    const Tensor y = must_run("Conv", {x, w, b}, c.attrs);
    const Tensor r = random_tensor(DType::kFloat32, y.shape().dims(), 43);
    for (const ActivationCase& a : {all_activations()[0], all_activations()[1], all_activations()[3]}) {
      SCOPED_TRACE(c.name + ", " + a.name);
      std::vector<ir::Attribute> attrs = c.attrs;
      for (const ir::Attribute& at : a.fused_attrs()) attrs.push_back(at);
      const NodeSpec spec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b, r}, .attrs = attrs};
      const Tensor fused = run_with(true, spec);
      EXPECT_TRUE(close(fused, run_with(false, spec), 1e-5));
      EXPECT_TRUE(same_bits(fused, apply_activation(a, must_run("Add", {y, r}))));
    }
  }
}

TEST(OneDnnConv, BoundFormMatchesRunBitwise) {
  const HeapCheck heap = cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
  SessionSizedPool pool;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 10), w = random_tensor(DType::kFloat32, c.w, 11, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 12);
    // Constant weights (packed once in prepare) and weights that change between calls; without
    // oneDNN the reference path's bound form (conv/conv_reference.h).
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w, b}, .attrs = c.attrs}, {1, 2}, heap);
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w}, .attrs = c.attrs}, {}, heap);
    std::vector<ir::Attribute> attrs = c.attrs;
    attrs.push_back(attr_s("activation", "relu"));
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b}, .attrs = attrs},
                         {1}, heap);
    const Tensor r = random_tensor(DType::kFloat32, must_run("Conv", {x, w}, c.attrs).shape().dims(), 13);
    expect_bound_matches(
        NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b, r}, .attrs = attrs}, {1, 2},
        heap);
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
// 2-thread pool; the same bits on the direct kernels, and close to the reference conv_forward.
// Kept weights (an initializer's): convolutions of several input sizes, sliced by channels or by rows, over
// one or two threads, Winograd or direct, pack W into shared buffers (kept_packs.h) and give the bits of
// weights packed for themselves; once every packing of W is gone, a new one packs what W holds then.
TEST(OneDnnConv, KeptWeightsGiveTheBitsOfWeightsPackedPerConvolution) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  Tensor w = random_tensor(DType::kFloat32, {48, 16, 3, 3}, 21);
  const Tensor b = random_tensor(DType::kFloat32, {48}, 22);
  const cpu::FusedActivation act = cpu::FusedActivation::make("relu", {}).value();
  auto run = [&](const std::vector<int64_t>& xd, bool kept, bool two_threads, bool wino) {
    ScopedWinograd winograd(wino);
    cpu::ConvAttrs attrs;
    attrs.pads = {1, 1, 1, 1};
    const Shape xs(xd), ws{48, 16, 3, 3}, bs{48};
    auto plan = cpu::ConvPlan::make(attrs, xs, ws, &bs, "Conv");
    EXPECT_TRUE(plan.is_ok());
    const Tensor x = random_tensor(DType::kFloat32, xd, 23);
    Tensor y = fresh_tensor(DType::kFloat32, plan->out_shape, 0);
    cpu::ThreadPool pool(two_threads ? 2 : 1);
    cpu::ScopedThreadPool bind(&pool);
    auto conv = cpu::OneDnnConv::make(*plan, act, true);
    EXPECT_NE(conv, nullptr);
    EXPECT_TRUE((kept ? conv->pack_kept_weights(w.data<float>()) : conv->pack_weights(w.data<float>())).is_ok());
    EXPECT_TRUE(conv->run(x.data<float>(), b.data<float>(), y.data<float>()).is_ok());
    return std::make_pair(std::move(conv), y);
  };
  {
    std::vector<std::unique_ptr<cpu::OneDnnConv>> alive;  // keeps the shared packings in use meanwhile
    for (const auto& xd : std::vector<std::vector<int64_t>>{{1, 16, 20, 24}, {1, 16, 20, 40}, {1, 16, 9, 13}})
      for (bool two : {false, true})
        for (bool wino : {false, true}) {
          SCOPED_TRACE(Shape(xd).to_string() + (two ? " 2 threads" : " 1 thread") + (wino ? " winograd" : ""));
          auto [kept_conv, kept_y] = run(xd, true, two, wino);
          auto [own_conv, own_y] = run(xd, false, two, wino);
          EXPECT_TRUE(same_bits(kept_y, own_y));
          alive.push_back(std::move(kept_conv));
        }
  }
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] *= -0.5f;
  auto [kept_conv, kept_y] = run({1, 16, 20, 24}, true, false, false);
  auto [own_conv, own_y] = run({1, 16, 20, 24}, false, false, false);
  EXPECT_TRUE(same_bits(kept_y, own_y));
}

TEST(OneDnnConv, SlicingOverThePoolKeepsTheBits) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  ScopedWinograd direct(false);
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
      {{2, 24, 31, 29}, {48, 24, 3, 3}, {1, 1, 1, 1}, {2, 2}},        // by channels, X's reorder by rows
      {{1, 40, 40, 39}, {48, 40, 1, 1}, {0, 0, 0, 0}, {1, 1}},        // the same, 1x1
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

// Winograd takes the 3x3 stride-1 convolutions of 16-channel multiples (not strided, 1x1 or odd
// channel counts); it repeats its bits for one slicing, stays close to the direct kernels across
// slicings, and is off with the switch.
TEST(OneDnnConv, WinogradTakesItsCasesAndRepeatsItsBits) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  auto plan_for = [](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> strides) {
    cpu::ConvAttrs attrs;
    attrs.pads = {1, 1, 1, 1};
    attrs.strides = std::move(strides);
    const Shape bs{w[0]};
    return cpu::ConvPlan::make(attrs, Shape(x), Shape(w), &bs, "Conv").value();
  };
  auto relu = cpu::FusedActivation::make("relu", {});
  ASSERT_TRUE(relu.is_ok());
  const cpu::ConvPlan p = plan_for({1, 32, 14, 14}, {64, 32, 3, 3}, {1, 1});
  {
    ScopedWinograd on(true);
    EXPECT_TRUE(cpu::OneDnnConv::make(p, *relu, true)->winograd());
    EXPECT_FALSE(cpu::OneDnnConv::make(plan_for({1, 32, 14, 14}, {64, 32, 3, 3}, {2, 2}), *relu, true)->winograd());
    EXPECT_FALSE(cpu::OneDnnConv::make(plan_for({1, 24, 14, 14}, {64, 24, 3, 3}, {1, 1}), *relu, true)->winograd());
  }
  {
    ScopedWinograd off(false);
    EXPECT_FALSE(cpu::OneDnnConv::make(p, *relu, true)->winograd());
  }
  const Tensor x = random_tensor(DType::kFloat32, {1, 32, 14, 14}, 66), w = random_tensor(DType::kFloat32, {64, 32, 3, 3}, 67);
  const Tensor b = random_tensor(DType::kFloat32, {64}, 68);
  auto run = [&](bool winograd, int threads) {
    ScopedWinograd scope(winograd);
    cpu::ThreadPool pool(threads);
    cpu::ScopedThreadPool bind(&pool);
    Tensor y = fresh_tensor(DType::kFloat32, p.out_shape, 0);
    auto conv = cpu::OneDnnConv::make(p, *relu, true);
    EXPECT_EQ(conv->winograd(), winograd);
    EXPECT_TRUE(conv->pack_weights(w.data<float>()).is_ok());
    EXPECT_TRUE(conv->run(x.data<float>(), b.data<float>(), y.data<float>()).is_ok());
    return y;
  };
  const Tensor direct = run(false, 1);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    const Tensor a = run(true, threads), again = run(true, threads);
    EXPECT_TRUE(same_bits(a, again));
    EXPECT_TRUE(close(a, direct, 1e-5));
  }
}

// With a residual: one slice and two (by channels, by rows) give the same bits, which are those of
// the convolution without residual followed by relu(y + R).
TEST(OneDnnConv, ResidualSlicingOverThePoolKeepsTheBits) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  ScopedWinograd direct(false);
  struct Case {
    std::vector<int64_t> x, w, pads, strides;
  };
  const std::vector<Case> cases = {
      {{1, 32, 20, 20}, {72, 32, 3, 3}, {1, 1, 1, 1}, {1, 1}},  // by channels, a partial last block
      {{1, 32, 20, 20}, {16, 32, 3, 3}, {1, 1, 1, 1}, {1, 1}},  // 1 block: by rows
      {{2, 3, 47, 33}, {16, 3, 7, 7}, {3, 2, 1, 3}, {2, 2}},    // by rows from NCHW input, batch 2
      {{1, 24, 33, 30}, {8, 24, 3, 3}, {0, 1, 2, 1}, {2, 1}},   // by rows, uneven
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE("X " + Shape(cs.x).to_string() + " W " + Shape(cs.w).to_string());
    cpu::ConvAttrs attrs;
    attrs.pads = cs.pads;
    attrs.strides = cs.strides;
    const Shape xs(cs.x), ws(cs.w), bs{cs.w[0]};
    auto plan = cpu::ConvPlan::make(attrs, xs, ws, &bs, "Conv");
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    const Tensor x = random_tensor(DType::kFloat32, xs.dims(), 44), w = random_tensor(DType::kFloat32, ws.dims(), 45);
    const Tensor b = random_tensor(DType::kFloat32, bs.dims(), 46);
    const Tensor r = random_tensor(DType::kFloat32, plan->out_shape.dims(), 47, -20.f, 20.f);
    auto relu = cpu::FusedActivation::make("relu", {});
    ASSERT_TRUE(relu.is_ok());

    // The expected bits: the convolution alone, then relu(y + R) element by element.
    Tensor want = fresh_tensor(DType::kFloat32, plan->out_shape, 0);
    auto plain = cpu::OneDnnConv::make(*plan, cpu::FusedActivation(), true);
    ASSERT_NE(plain, nullptr);
    ASSERT_TRUE(plain->pack_weights(w.data<float>()).is_ok());
    ASSERT_TRUE(plain->run(x.data<float>(), b.data<float>(), want.data<float>()).is_ok());
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data<float>()[i] = cpu::ReluOp()(want.data<float>()[i] + r.data<float>()[i]);

    Tensor y1 = fresh_tensor(DType::kFloat32, plan->out_shape, 0), y2 = fresh_tensor(DType::kFloat32, plan->out_shape, 0);
    auto one = cpu::OneDnnConv::make(*plan, *relu, true, true);
    ASSERT_NE(one, nullptr);
    ASSERT_TRUE(one->pack_weights(w.data<float>()).is_ok());
    ASSERT_TRUE(one->run(x.data<float>(), b.data<float>(), y1.data<float>(), r.data<float>()).is_ok());
    EXPECT_TRUE(same_bits(y1, want));

    cpu::ThreadPool pool(2);
    cpu::ScopedThreadPool bind(&pool);
    auto two = cpu::OneDnnConv::make(*plan, *relu, true, true);
    ASSERT_NE(two, nullptr);
    EXPECT_EQ(two->num_slices(), 2);
    ASSERT_TRUE(two->pack_weights(w.data<float>()).is_ok());
    ASSERT_TRUE(two->run(x.data<float>(), b.data<float>(), y2.data<float>(), r.data<float>()).is_ok());
    EXPECT_TRUE(same_bits(y2, want));
  }
}

Tensor must_run_spec(const NodeSpec& spec) {
  auto y = run_single(spec);
  EXPECT_TRUE(y.is_ok()) << y.status().to_string();
  return y.is_ok() ? *y : Tensor();
}

// t (float32 [N, C, H, W], C % 16 == 0) in the channel-blocked layout, or back from it.
Tensor blocked(const Tensor& t, bool to_blocked = true) {
  Tensor out = fresh_tensor(DType::kFloat32, t.shape(), 0);
  const int64_t n = t.shape()[0], c = t.shape()[1], hw = t.shape()[2] * t.shape()[3];
  if (to_blocked) cpu::block_channels(t.data<float>(), out.data<float>(), n, c, hw);
  else cpu::unblock_channels(t.data<float>(), out.data<float>(), n, c, hw);
  return out;
}

std::vector<ir::Attribute> layout_attrs(std::vector<ir::Attribute> attrs, const cpu::ConvLayouts& lay) {
  if (lay.x) attrs.push_back(attr_s("input_layout", "NCHW16c"));
  if (lay.y) attrs.push_back(attr_s("output_layout", "NCHW16c"));
  if (lay.r) attrs.push_back(attr_s("residual_layout", "NCHW16c"));
  return attrs;
}

// Every combination of channel-blocked X, Y and R gives the bits of the NCHW FusedConv, reordered:
// on oneDNN (by channels, by rows, the gemm-based 1x1) and on the reference path.
TEST(OneDnnConv, ChannelBlockedLayoutsGiveTheNchwBits) {
  const std::vector<ConvCase> cases = {
      {"3x3 16 -> 32", {2, 16, 9, 7}, {32, 16, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}},
      {"1x1 stride 2, 32 -> 48", {1, 32, 10, 10}, {48, 32, 1, 1}, {attr_ints("strides", {2, 2})}},
      {"asymmetric pads, 16 -> 16", {1, 16, 40, 40}, {16, 16, 3, 3}, {attr_ints("pads", {1, 0, 1, 2})}},
  };
  for (const ConvCase& c : cases) {
    const Tensor x = random_tensor(DType::kFloat32, c.x, 50), w = random_tensor(DType::kFloat32, c.w, 51, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 52);
    const Tensor r = random_tensor(DType::kFloat32, must_run("Conv", {x, w}, c.attrs).shape().dims(), 53);
    for (const ActivationCase& a : {all_activations()[0], all_activations()[1], all_activations()[3]}) {
      for (bool onednn : {true, false}) {
        ScopedOneDnn scope(onednn);
        std::vector<ir::Attribute> attrs = c.attrs;
        for (const ir::Attribute& at : a.fused_attrs()) attrs.push_back(at);
        auto spec = [&](const Tensor& xi, const Tensor* ri, const cpu::ConvLayouts& lay) {
          std::vector<Tensor> in = {xi, w, b};
          if (ri) in.push_back(*ri);
          return NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = in, .attrs = layout_attrs(attrs, lay)};
        };
        const Tensor want = must_run_spec(spec(x, nullptr, {})), want_r = must_run_spec(spec(x, &r, {}));
        for (int mask = 1; mask < 8; ++mask) {
          const cpu::ConvLayouts lay{.x = (mask & 1) != 0, .y = (mask & 2) != 0, .r = (mask & 4) != 0};
          SCOPED_TRACE(c.name + ", " + a.name + (onednn ? ", oneDNN" : ", reference") + ", blocked x/y/r " +
                       std::to_string(lay.x) + std::to_string(lay.y) + std::to_string(lay.r));
          const Tensor xi = lay.x ? blocked(x) : x, ri = lay.r ? blocked(r) : r;
          const Tensor got_r = must_run_spec(spec(xi, &ri, lay));
          EXPECT_TRUE(same_bits(lay.y ? blocked(got_r, false) : got_r, want_r));
          if (lay.r) continue;
          const Tensor got = must_run_spec(spec(xi, nullptr, lay));
          EXPECT_TRUE(same_bits(lay.y ? blocked(got, false) : got, want));
        }
      }
    }
  }
}

TEST(OneDnnConv, ChannelBlockedBoundFormMatchesRunBitwise) {
  const HeapCheck heap = cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
  SessionSizedPool pool;
  const Tensor x = random_tensor(DType::kFloat32, {1, 16, 12, 12}, 54), w = random_tensor(DType::kFloat32, {32, 16, 3, 3}, 55);
  const Tensor b = random_tensor(DType::kFloat32, {32}, 56), r = random_tensor(DType::kFloat32, {1, 32, 12, 12}, 57);
  for (int mask = 1; mask < 8; ++mask) {
    const cpu::ConvLayouts lay{.x = (mask & 1) != 0, .y = (mask & 2) != 0, .r = (mask & 4) != 0};
    SCOPED_TRACE(mask);
    const std::vector<ir::Attribute> attrs =
        layout_attrs({attr_ints("pads", {1, 1, 1, 1}), attr_s("activation", "relu")}, lay);
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b, r}, .attrs = attrs},
                         {1, 2}, heap);
  }
}

TEST(OneDnnConv, ChannelBlockedLayoutErrors) {
  const Tensor x = random_tensor(DType::kFloat32, {1, 8, 6, 6}, 58), w = random_tensor(DType::kFloat32, {16, 8, 3, 3}, 59);
  // X with 8 channels cannot be blocked; an unknown layout; a residual layout without a residual.
  EXPECT_FALSE(run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w},
                                   .attrs = {attr_s("input_layout", "NCHW16c")}})
                   .is_ok());
  EXPECT_FALSE(run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w},
                                   .attrs = {attr_s("output_layout", "NHWC")}})
                   .is_ok());
  EXPECT_FALSE(run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w},
                                   .attrs = {attr_s("residual_layout", "NCHW16c")}})
                   .is_ok());
  // Blocked layouts are float32 only.
  const Tensor xd = random_tensor(DType::kFloat64, {1, 16, 6, 6}, 60), wd = random_tensor(DType::kFloat64, {16, 16, 3, 3}, 61);
  EXPECT_FALSE(run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {xd, wd},
                                   .attrs = {attr_s("output_layout", "NCHW16c")}})
                   .is_ok());
}

// Channel-blocked X, Y and R under a 2-thread pool (by channels and by rows): the bits of one slice.
TEST(OneDnnConv, ChannelBlockedSlicingOverThePoolKeepsTheBits) {
  if (!cpu::onednn_enabled()) GTEST_SKIP() << "built without oneDNN";
  ScopedWinograd direct(false);
  struct Case {
    std::vector<int64_t> x, w;
  };
  for (const Case& cs : {Case{{1, 32, 20, 20}, {64, 32, 3, 3}}, Case{{1, 16, 30, 30}, {16, 16, 3, 3}}}) {
    SCOPED_TRACE("X " + Shape(cs.x).to_string() + " W " + Shape(cs.w).to_string());
    cpu::ConvAttrs attrs;
    attrs.pads = {1, 1, 1, 1};
    const Shape xs(cs.x), ws(cs.w), bs{cs.w[0]};
    auto plan = cpu::ConvPlan::make(attrs, xs, ws, &bs, "Conv");
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    const Tensor x = blocked(random_tensor(DType::kFloat32, xs.dims(), 62));
    const Tensor w = random_tensor(DType::kFloat32, ws.dims(), 63), b = random_tensor(DType::kFloat32, bs.dims(), 64);
    const Tensor r = random_tensor(DType::kFloat32, plan->out_shape.dims(), 65);
    auto relu = cpu::FusedActivation::make("relu", {});
    ASSERT_TRUE(relu.is_ok());
    for (bool r_blocked : {false, true}) {
      const cpu::ConvLayouts lay{.x = true, .y = true, .r = r_blocked};
      const Tensor ri = r_blocked ? blocked(r) : r;
      Tensor y1 = fresh_tensor(DType::kFloat32, plan->out_shape, 0), y2 = fresh_tensor(DType::kFloat32, plan->out_shape, 0);
      auto one = cpu::OneDnnConv::make(*plan, *relu, true, true, lay);
      ASSERT_NE(one, nullptr);
      ASSERT_TRUE(one->pack_weights(w.data<float>()).is_ok());
      ASSERT_TRUE(one->run(x.data<float>(), b.data<float>(), y1.data<float>(), ri.data<float>()).is_ok());
      cpu::ThreadPool pool(2);
      cpu::ScopedThreadPool bind(&pool);
      auto two = cpu::OneDnnConv::make(*plan, *relu, true, true, lay);
      ASSERT_NE(two, nullptr);
      EXPECT_EQ(two->num_slices(), 2);
      ASSERT_TRUE(two->pack_weights(w.data<float>()).is_ok());
      ASSERT_TRUE(two->run(x.data<float>(), b.data<float>(), y2.data<float>(), ri.data<float>()).is_ok());
      EXPECT_TRUE(same_bits(y2, y1));
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
