// The depthwise convolution kernel (backend/cpu/conv/depthwise_conv.h):
// - against a direct double-precision convolution: odd sizes, channel counts that are not multiples
//   of 8 or 16, kernels 1-7 (square and not), strides 1-3, dilations, asymmetric and oversized pads,
//   1-D, a channel multiplier, batches; at every simd level (scalar, AVX2, AVX-512);
// - the same bits at every pool size, and in the NCHW16c layout (X, Y and R each blocked or not)
//   as in NCHW;
// - through the Conv and sdx.FusedConv kernels: FusedConv equals Conv + activation (every
//   activation) and Conv + Add + activation bit for bit, NaN and infinities where Conv has them;
//   the bound form equals run() with no allocation per call; other cases are left to oneDNN.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/conv/depthwise_conv.h"
#include "backend/cpu/simd/isa.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/threading/thread_pool.h"
#include "../kernels/fused_test_util.h"
#include "conv_test_util.h"

namespace sdx::test {
namespace {

struct Case {
  std::string name;
  std::vector<int64_t> x, w;  // X [N, C, (H,) W], W [M, 1, (KH,) KW]
  std::vector<int64_t> strides, dilations, pads;
};

std::vector<Case> cases() {
  return {
      {"3x3 pad 1", {1, 16, 12, 12}, {16, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {"3x3 stride 2, 7 channels, odd size", {1, 7, 13, 11}, {7, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {"5x5 stride 2 on a 14x14 plane", {1, 32, 14, 14}, {32, 1, 5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}},
      {"5x5 on 7x7, 48 channels", {1, 48, 7, 7}, {48, 1, 5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
      {"asymmetric pads, 3 channels", {2, 3, 9, 10}, {3, 1, 3, 3}, {1, 1}, {1, 1}, {0, 2, 1, 0}},
      {"dilation 2", {1, 17, 15, 16}, {17, 1, 3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}},
      {"dilation 2 stride 2", {1, 16, 20, 19}, {16, 1, 3, 3}, {2, 2}, {2, 3}, {2, 3, 1, 2}},
      {"stride 3, 7x7 kernel", {1, 5, 23, 25}, {5, 1, 7, 7}, {3, 3}, {1, 1}, {3, 3, 3, 3}},
      {"stride 2 x 1, 3x2 kernel", {1, 24, 13, 70}, {24, 1, 3, 2}, {2, 1}, {1, 1}, {1, 0, 1, 1}},
      {"stride 1 x 2 (OCR)", {1, 8, 6, 41}, {8, 1, 3, 3}, {1, 2}, {1, 1}, {1, 1, 1, 1}},
      {"1x1", {1, 9, 5, 5}, {9, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {"pads larger than the kernel", {1, 4, 3, 4}, {4, 1, 2, 2}, {2, 2}, {1, 1}, {3, 3, 4, 5}},
      {"wide rows (several vector blocks)", {1, 2, 5, 150}, {2, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {"channel multiplier 2", {2, 5, 10, 9}, {10, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {"two planes, 40 rows (bands)", {1, 2, 40, 37}, {2, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {"20x1 filters over a column (FSMN)", {1, 16, 47, 1}, {16, 1, 20, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {"5x1 stride 2, padded, over a column", {1, 3, 30, 1}, {3, 1, 5, 1}, {2, 1}, {1, 1}, {2, 0, 3, 0}},
      {"1-D", {2, 6, 50}, {6, 1, 5}, {1}, {1}, {2, 2}},
      {"1-D stride 2, dilation 3", {1, 16, 33}, {16, 1, 3}, {2}, {3}, {3, 1}},
  };
}

std::vector<ir::Attribute> attrs_of(const Case& c) {
  return {attr_i("group", c.x[1]), attr_ints("strides", c.strides), attr_ints("dilations", c.dilations),
          attr_ints("pads", c.pads)};
}

cpu::ConvPlan plan_of(const Case& c, bool bias) {
  cpu::ConvAttrs a;
  a.group = c.x[1];
  a.strides = c.strides;
  a.dilations = c.dilations;
  a.pads = c.pads;
  a.has_pads = true;
  const Shape b({c.w[0]});
  auto p = cpu::ConvPlan::make(a, Shape(c.x), Shape(c.w), bias ? &b : nullptr, "test");
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return std::move(p).value();
}

// The convolution, directly, in double: every tap inside the image, bias first.
std::vector<double> direct(const Case& c, const cpu::ConvPlan& p, const float* x, const float* w, const float* b) {
  const bool two_d = c.x.size() == 4;
  const int64_t H = two_d ? c.x[2] : 1, W = c.x.back(), KH = two_d ? c.w[2] : 1, KW = c.w.back();
  const int64_t OH = two_d ? p.g.out[0] : 1, OW = p.g.out.back();
  const int64_t sh = two_d ? c.strides[0] : 1, sw = c.strides.back(), dh = two_d ? c.dilations[0] : 1,
                dw = c.dilations.back(), pt = two_d ? c.pads[0] : 0, pl = c.pads[two_d ? 1 : 0];
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], mult = M / C;
  std::vector<double> y(static_cast<size_t>(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b ? b[m] : 0.0;
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              acc += double(w[(m * KH + kh) * KW + kw]) * x[((n * C + m / mult) * H + ih) * W + iw];
            }
          y[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] = acc;
        }
  return y;
}

Tensor run_kernel(const cpu::ConvPlan& p, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* r = nullptr,
                  const cpu::FusedActivation& act = {}, cpu::ConvLayouts lay = {}) {
  Tensor y = Tensor::allocate(DType::kFloat32, p.out_shape).value();
  auto conv = cpu::DepthwiseConv::make(p, act, lay, r != nullptr);
  EXPECT_NE(conv, nullptr);
  if (!conv) return y;
  EXPECT_EQ(conv->blocked(), lay.any());
  conv->run(x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr, r ? r->data<float>() : nullptr,
            y.data<float>());
  return y;
}

TEST(DepthwiseConv, MatchesADirectConvolutionAtEverySimdLevel) {
  for (cpu::simd::Isa isa : {cpu::simd::Isa::kScalar, cpu::simd::Isa::kAvx2, cpu::simd::Isa::kAvx512}) {
    if (isa > cpu::simd::detected_isa()) continue;
    cpu::simd::ScopedIsa level(isa);
    for (const Case& c : cases()) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + ", " + c.name + (bias ? ", bias" : ""));
        const cpu::ConvPlan p = plan_of(c, bias);
        ASSERT_TRUE(cpu::depthwise_conv_applies(p));
        const Tensor x = random_tensor(DType::kFloat32, c.x, 1), w = random_tensor(DType::kFloat32, c.w, 2);
        const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 3);
        const Tensor y = run_kernel(p, x, w, bias ? &b : nullptr);
        const std::vector<double> want = direct(c, p, x.data<float>(), w.data<float>(), bias ? b.data<float>() : nullptr);
        ASSERT_EQ(static_cast<size_t>(y.numel()), want.size());
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(y.data<float>()[i], want[i], 1e-5 * (30 + std::fabs(want[i]))) << "element " << i;
      }
    }
  }
}

TEST(DepthwiseConv, TheSameBitsAtEveryPoolSize) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const cpu::ConvPlan p = plan_of(c, true);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 4), w = random_tensor(DType::kFloat32, c.w, 5);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 6);
    Tensor one;
    {
      Pool pool(1);
      one = run_kernel(p, x, w, &b);
    }
    for (int threads : {2, 3}) {
      Pool pool(threads);
      EXPECT_TRUE(same_bits(run_kernel(p, x, w, &b), one)) << threads << " threads";
    }
  }
}

TEST(DepthwiseConv, BlockedLayoutsGiveTheNchwValues) {
  auto act = cpu::FusedActivation::make("hard_swish", {});
  ASSERT_TRUE(act.is_ok());
  int tried = 0;
  for (const Case& c : cases()) {
    if (c.x.size() != 4 || c.x[1] % 16 != 0 || c.w[0] != c.x[1]) continue;
    ++tried;
    const cpu::ConvPlan p = plan_of(c, true);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 7), w = random_tensor(DType::kFloat32, c.w, 8);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 9);
    const Tensor r = random_tensor(DType::kFloat32, p.out_shape.dims(), 10);
    const Tensor want = run_kernel(p, x, w, &b, &r, act.value());
    const Tensor xb = blocked_copy(x), rb = blocked_copy(r);
    for (int mask = 1; mask < 8; ++mask) {
      const cpu::ConvLayouts lay{.x = (mask & 1) != 0, .y = (mask & 2) != 0, .r = (mask & 4) != 0};
      SCOPED_TRACE(c.name + ", layouts x " + std::to_string(lay.x) + " y " + std::to_string(lay.y) + " r " +
                   std::to_string(lay.r));
      for (int threads : {1, 2}) {
        Pool pool(threads);
        const Tensor y = run_kernel(p, lay.x ? xb : x, w, &b, lay.r ? &rb : &r, act.value(), lay);
        EXPECT_TRUE(same_values(lay.y ? unblocked_copy(y) : y, want)) << threads << " threads";
      }
    }
  }
  EXPECT_GE(tried, 4);
}

TEST(DepthwiseConv, DeclinesWhatItDoesNotTake) {
  const Case grouped{"2 channels per group", {1, 8, 6, 6}, {8, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}};
  cpu::ConvAttrs a;
  a.group = 4;
  auto p = cpu::ConvPlan::make(a, Shape(grouped.x), Shape(grouped.w), nullptr, "test");
  ASSERT_TRUE(p.is_ok());
  EXPECT_FALSE(cpu::depthwise_conv_applies(p.value()));
  EXPECT_EQ(cpu::DepthwiseConv::make(p.value(), {}), nullptr);
  a.group = 1;
  // One input channel (an STFT as a convolution): an ordinary convolution for im2col + gemm.
  auto dense = cpu::ConvPlan::make(a, Shape({1, 1, 6, 6}), Shape({4, 1, 3, 3}), nullptr, "test");
  ASSERT_TRUE(dense.is_ok());
  EXPECT_FALSE(cpu::depthwise_conv_applies(dense.value()));
  // A channel multiplier of 4 is taken, 5 is not.
  a.group = 2;
  auto four = cpu::ConvPlan::make(a, Shape({1, 2, 6, 6}), Shape({8, 1, 3, 3}), nullptr, "test");
  auto five = cpu::ConvPlan::make(a, Shape({1, 2, 6, 6}), Shape({10, 1, 3, 3}), nullptr, "test");
  ASSERT_TRUE(four.is_ok() && five.is_ok());
  EXPECT_TRUE(cpu::depthwise_conv_applies(four.value()));
  EXPECT_FALSE(cpu::depthwise_conv_applies(five.value()));
  // Blocked tensors need 2-D, 16-channel multiples and no multiplier.
  const cpu::ConvLayouts blocked{.x = true, .y = true};
  EXPECT_EQ(cpu::DepthwiseConv::make(plan_of(cases()[1], false), {}, blocked), nullptr);    // 7 channels
  EXPECT_EQ(cpu::DepthwiseConv::make(plan_of(cases().back(), false), {}, blocked), nullptr);  // 1-D
  EXPECT_NE(cpu::DepthwiseConv::make(plan_of(cases()[0], false), {}, blocked), nullptr);
  a.group = 1;
  auto three_d = cpu::ConvPlan::make(a, Shape({1, 1, 4, 4, 4}), Shape({1, 1, 3, 3, 3}), nullptr, "test");
  ASSERT_TRUE(three_d.is_ok());
  EXPECT_FALSE(cpu::depthwise_conv_applies(three_d.value()));
}

// Through the kernels: FusedConv (every activation, with and without a residual) equals Conv then
// the ONNX activation (then Add first), bit for bit, in NCHW and with X, Y and R blocked.
TEST(DepthwiseConv, FusedConvEqualsConvThenActivationBitwise) {
  const std::vector<Case> all = cases();
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, size_t{13}, size_t{15}, size_t{17}}) {
    const Case& c = all[i];
    const Tensor x = random_tensor(DType::kFloat32, c.x, 11), w = random_tensor(DType::kFloat32, c.w, 12, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 13);
    const Tensor y = must_run("Conv", {x, w, b}, attrs_of(c));
    const Tensor r = random_tensor(DType::kFloat32, y.shape().dims(), 14);
    const Tensor yr = must_run("Add", {y, r});
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(c.name + ", " + a.name);
      expect_fused_conv_bits(x, w, b, r, attrs_of(c), a, y, yr);
      std::vector<ir::Attribute> attrs = attrs_of(c);
      for (const ir::Attribute& at : a.fused_attrs()) attrs.push_back(at);
      if (c.x.size() != 4 || c.x[1] % 16 != 0) continue;
      std::vector<ir::Attribute> blocked = attrs;
      blocked.push_back(attr_s("input_layout", "NCHW16c"));
      blocked.push_back(attr_s("output_layout", "NCHW16c"));
      blocked.push_back(attr_s("residual_layout", "NCHW16c"));
      auto b16 = run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1,
                                     .inputs = {blocked_copy(x), w, b, blocked_copy(r)}, .attrs = blocked});
      ASSERT_TRUE(b16.is_ok()) << b16.status().to_string();
      EXPECT_TRUE(same_values(unblocked_copy(*b16), apply_activation(a, yr)));
    }
  }
}

// NaN and infinities in X land where a direct convolution puts them, in both layouts.
TEST(DepthwiseConv, NaNAndInfinitiesPropagate) {
  const Case c = cases()[2];
  Tensor x = random_tensor(DType::kFloat32, c.x, 15);
  for (int64_t k = 3; k < x.numel(); k += 97) x.data<float>()[k] = (k % 2) ? NAN : INFINITY;
  const Tensor w = random_tensor(DType::kFloat32, c.w, 16, 0.1f, 0.5f);  // positive: inf + inf stays inf
  const cpu::ConvPlan p = plan_of(c, false);
  const std::vector<double> want = direct(c, p, x.data<float>(), w.data<float>(), nullptr);
  const Tensor nchw = run_kernel(p, x, w, nullptr);
  const Tensor blocked = unblocked_copy(run_kernel(p, blocked_copy(x), w, nullptr, nullptr, {}, {.x = true, .y = true}));
  int64_t nans = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    for (const Tensor* t : {&nchw, &blocked}) {
      const float g = t->data<float>()[i];
      ASSERT_EQ(std::isnan(g), std::isnan(want[i])) << "element " << i;
      ASSERT_EQ(std::isinf(g), std::isinf(want[i])) << "element " << i;
    }
    nans += std::isnan(want[i]);
  }
  EXPECT_GT(nans, 0);
}

TEST(DepthwiseConv, BoundFormMatchesRunWithoutAllocating) {
  Pool pool(cpu::ThreadPool::default_num_threads());
  const std::vector<Case> all = cases();
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}, size_t{13}, size_t{15}, size_t{18}}) {
    const Case& c = all[i];
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 17), w = random_tensor(DType::kFloat32, c.w, 18);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 19);
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w, b}, .attrs = attrs_of(c)}, {1, 2});
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w}, .attrs = attrs_of(c)});  // W changes
    std::vector<ir::Attribute> attrs = attrs_of(c);
    attrs.push_back(attr_s("activation", "hard_swish"));
    const Tensor r = random_tensor(DType::kFloat32, must_run("Conv", {x, w}, attrs_of(c)).shape().dims(), 20);
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b, r}, .attrs = attrs},
                         {1, 2});
    if (c.x.size() != 4 || c.x[1] % 16 != 0) continue;
    attrs.push_back(attr_s("input_layout", "NCHW16c"));
    attrs.push_back(attr_s("output_layout", "NCHW16c"));
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1,
                                  .inputs = {blocked_copy(x), w, b, r}, .attrs = attrs},
                         {1, 2});
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1,
                                  .inputs = {blocked_copy(x), w, b, r}, .attrs = attrs});  // W changes
  }
}

// The NCHW loops pad rows into the thread's scratch: binding grows it, so the bound form's first run on the
// binding thread allocates nothing even when that thread ran no item of it before.
TEST(DepthwiseConv, BindingGrowsTheBindingThreadsScratch) {
  const Case c = cases()[1];
  const Tensor x = random_tensor(DType::kFloat32, c.x, 17), w = random_tensor(DType::kFloat32, c.w, 18);
  expect_first_bound_run_on_a_new_thread_allocates_nothing(NodeSpec{.op = "Conv", .inputs = {x, w}, .attrs = attrs_of(c)},
                                                           {1});
}

}  // namespace
}  // namespace sdx::test
