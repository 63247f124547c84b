// The pointwise product for 1x1 convolutions on an NCHW input (backend/cpu/conv/pointwise_conv.h):
// - against a direct double-precision product: channel counts that are not multiples of 4, 6, 8 or 16
//   (every remainder of the kernels' channel groups), position counts with vector tails, 1-D, batches,
//   with and without a bias; at every simd level (scalar, AVX2, AVX-512);
// - the same bits at every pool size (splits by columns and, for small images, by output channels),
//   and a channel-blocked Y holds the NCHW values;
// - it declines what it does not take (strides, pads, 3x3 kernels, groups, a blocked X, more than
//   kPointwiseMaxChannels input channels, fewer than kPointwiseMinPositions positions);
// - through the Conv and sdx.FusedConv kernels: FusedConv equals Conv + activation (every activation)
//   and Conv + Add + activation bit for bit; the bound form equals run() with no allocation per call.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/conv/pointwise_conv.h"
#include "backend/cpu/simd/isa.h"
#include "../kernels/fused_test_util.h"
#include "conv_test_util.h"

namespace sdx::test {
namespace {

struct Case {
  std::string name;
  std::vector<int64_t> x;  // [N, C, (H,) W]
  int64_t M;
};

std::vector<Case> cases() {
  return {
      {"3 -> 5 channels, 11 x 13", {1, 3, 11, 13}, 5},
      {"16 -> 48, 13 x 13 (vector tail)", {1, 16, 13, 13}, 48},
      {"24 -> 24, batch 2, 12 x 11", {2, 24, 12, 11}, 24},
      {"50 -> 17, one row of 165", {1, 50, 1, 165}, 17},
      {"7 -> 13, 8 x 16 (whole vectors)", {1, 7, 8, 16}, 13},
      {"1 -> 7, 130 positions", {1, 1, 1, 130}, 7},
      {"64 -> 96, 12 x 11 (split by channels)", {1, 64, 12, 11}, 96},
      {"48 -> 32, 40 x 41 (several chunks)", {1, 48, 40, 41}, 32},
      {"1-D, 12 -> 20 over 150", {2, 12, 150}, 20},
  };
}

std::vector<ir::Attribute> attrs_of(const Case& c) {
  const size_t rank = c.x.size() - 2;
  return {attr_ints("kernel_shape", std::vector<int64_t>(rank, 1))};
}

std::vector<int64_t> w_dims(const Case& c) {
  std::vector<int64_t> d = {c.M, c.x[1]};
  d.resize(c.x.size(), 1);
  return d;
}

cpu::ConvPlan plan_of(const Case& c, bool bias) {
  cpu::ConvAttrs a;
  const Shape b({c.M});
  auto p = cpu::ConvPlan::make(a, Shape(c.x), Shape(w_dims(c)), bias ? &b : nullptr, "test");
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return std::move(p).value();
}

int64_t positions(const Case& c) {
  int64_t p = 1;
  for (size_t i = 2; i < c.x.size(); ++i) p *= c.x[i];
  return p;
}

// The product, directly, in double.
std::vector<double> direct(const Case& c, const float* x, const float* w, const float* b) {
  const int64_t N = c.x[0], C = c.x[1], M = c.M, P = positions(c);
  std::vector<double> y(static_cast<size_t>(N * M * P));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < P; ++j) {
        double acc = b ? b[m] : 0.0;
        for (int64_t ch = 0; ch < C; ++ch) acc += double(w[m * C + ch]) * x[(n * C + ch) * P + j];
        y[static_cast<size_t>((n * M + m) * P + j)] = acc;
      }
  return y;
}

Tensor run_path(const cpu::ConvPlan& p, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* r = nullptr,
                const cpu::FusedActivation& act = {}, cpu::ConvLayouts lay = {}) {
  Tensor y = Tensor::allocate(DType::kFloat32, p.out_shape).value();
  std::optional<Status> st = cpu::run_pointwise_conv(p, act, x, w, b, y, r, lay);
  EXPECT_TRUE(st.has_value()) << "the path declined";
  if (st) {
    EXPECT_TRUE(st->is_ok()) << st->to_string();
  }
  return y;
}

TEST(PointwiseConv, MatchesADirectProductAtEverySimdLevel) {
  for (cpu::simd::Isa isa : {cpu::simd::Isa::kScalar, cpu::simd::Isa::kAvx2, cpu::simd::Isa::kAvx512}) {
    if (isa > cpu::simd::detected_isa()) continue;
    cpu::simd::ScopedIsa level(isa);
    for (const Case& c : cases()) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE(c.name + (bias ? ", bias" : "") + ", isa " + std::to_string(static_cast<int>(isa)));
        const Tensor x = random_tensor(DType::kFloat32, c.x, 1), w = random_tensor(DType::kFloat32, w_dims(c), 2);
        const Tensor b = random_tensor(DType::kFloat32, {c.M}, 3);
        const cpu::ConvPlan p = plan_of(c, bias);
        const Tensor y = run_path(p, x, w, bias ? &b : nullptr);
        const std::vector<double> want = direct(c, x.data<float>(), w.data<float>(), bias ? b.data<float>() : nullptr);
        ASSERT_EQ(static_cast<size_t>(y.numel()), want.size());
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(y.data<float>()[i], want[i], 1e-5 * (1.0 + 9.0 * c.x[1]) + 1e-6 * std::abs(want[i]))
              << "element " << i;
      }
    }
  }
}

TEST(PointwiseConv, TheSameBitsAtEveryPoolSize) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 4), w = random_tensor(DType::kFloat32, w_dims(c), 5);
    const Tensor b = random_tensor(DType::kFloat32, {c.M}, 6);
    const cpu::ConvPlan p = plan_of(c, true);
    const Tensor one = run_path(p, x, w, &b);
    for (int threads : {2, 3, 4}) {
      Pool pool(threads);
      EXPECT_TRUE(same_bits(run_path(p, x, w, &b), one)) << threads << " threads";
    }
  }
}

TEST(PointwiseConv, BlockedOutputHoldsTheNchwValues) {
  auto act = cpu::FusedActivation::make("relu", {});
  ASSERT_TRUE(act.is_ok());
  int tried = 0;
  for (const Case& c : cases()) {
    if (c.x.size() != 4 || c.M % 16 != 0) continue;
    ++tried;
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 7), w = random_tensor(DType::kFloat32, w_dims(c), 8);
    const Tensor b = random_tensor(DType::kFloat32, {c.M}, 9);
    const cpu::ConvPlan p = plan_of(c, true);
    const Tensor r = random_tensor(DType::kFloat32, p.out_shape.dims(), 10);
    const Tensor want = run_path(p, x, w, &b, &r, act.value());
    for (int threads : {1, 2}) {
      Pool pool(threads);
      const Tensor y = run_path(p, x, w, &b, &r, act.value(), {.y = true});
      EXPECT_TRUE(same_bits(unblocked_copy(y), want)) << threads << " threads";
    }
  }
  EXPECT_GE(tried, 3);
}

TEST(PointwiseConv, DeclinesWhatItDoesNotTake) {
  auto plan = [](cpu::ConvAttrs a, std::vector<int64_t> x, std::vector<int64_t> w) {
    auto p = cpu::ConvPlan::make(a, Shape(x), Shape(w), nullptr, "test");
    EXPECT_TRUE(p.is_ok()) << p.status().to_string();
    return std::move(p).value();
  };
  cpu::ConvAttrs plain;
  EXPECT_TRUE(cpu::pointwise_conv_applies(plan(plain, {1, 16, 16, 16}, {32, 16, 1, 1}), {}));
  EXPECT_TRUE(cpu::pointwise_conv_applies(plan(plain, {1, 16, 16, 16}, {32, 16, 1, 1}), {.y = true}));
  EXPECT_FALSE(cpu::pointwise_conv_applies(plan(plain, {1, 16, 16, 16}, {32, 16, 1, 1}), {.x = true}));
  EXPECT_FALSE(cpu::pointwise_conv_applies(plan(plain, {1, 16, 16, 16}, {24, 16, 1, 1}), {.y = true}));
  EXPECT_FALSE(cpu::pointwise_conv_applies(plan(plain, {1, 16, 16, 16}, {32, 16, 3, 3}), {}));
  EXPECT_FALSE(cpu::pointwise_conv_applies(
      plan(plain, {1, cpu::kPointwiseMaxChannels + 1, 16, 16}, {8, cpu::kPointwiseMaxChannels + 1, 1, 1}), {}));
  EXPECT_FALSE(cpu::pointwise_conv_applies(plan(plain, {1, 16, 1, cpu::kPointwiseMinPositions - 1}, {32, 16, 1, 1}), {}));
  cpu::ConvAttrs strided;
  strided.strides = {2, 2};
  EXPECT_FALSE(cpu::pointwise_conv_applies(plan(strided, {1, 16, 16, 16}, {32, 16, 1, 1}), {}));
  cpu::ConvAttrs padded;
  padded.pads = {1, 1, 1, 1};
  padded.has_pads = true;
  EXPECT_FALSE(cpu::pointwise_conv_applies(plan(padded, {1, 16, 16, 16}, {32, 16, 1, 1}), {}));
  cpu::ConvAttrs grouped;
  grouped.group = 2;
  EXPECT_FALSE(cpu::pointwise_conv_applies(plan(grouped, {1, 16, 16, 16}, {32, 8, 1, 1}), {}));
}

// Through the kernels: FusedConv (every activation, with and without a residual) equals Conv then the
// ONNX activation (then Add first), bit for bit.
TEST(PointwiseConv, FusedConvEqualsConvThenActivationBitwise) {
  const std::vector<Case> all = cases();
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}, size_t{8}}) {
    const Case& c = all[i];
    const Tensor x = random_tensor(DType::kFloat32, c.x, 11), w = random_tensor(DType::kFloat32, w_dims(c), 12, -0.5f, 0.5f);
    const Tensor b = random_tensor(DType::kFloat32, {c.M}, 13);
    const Tensor y = must_run("Conv", {x, w, b}, attrs_of(c));
    const Tensor r = random_tensor(DType::kFloat32, y.shape().dims(), 14);
    const Tensor yr = must_run("Add", {y, r});
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(c.name + ", " + a.name);
      expect_fused_conv_bits(x, w, b, r, attrs_of(c), a, y, yr);
    }
  }
}

TEST(PointwiseConv, BoundFormMatchesRunWithoutAllocating) {
  Pool pool(cpu::ThreadPool::default_num_threads());
  const std::vector<Case> all = cases();
  for (size_t i : {size_t{0}, size_t{1}, size_t{6}, size_t{8}}) {
    const Case& c = all[i];
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(DType::kFloat32, c.x, 17), w = random_tensor(DType::kFloat32, w_dims(c), 18);
    const Tensor b = random_tensor(DType::kFloat32, {c.M}, 19);
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w, b}, .attrs = attrs_of(c)}, {1, 2});
    expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x, w}, .attrs = attrs_of(c)});  // W changes
    std::vector<ir::Attribute> attrs = attrs_of(c);
    attrs.push_back(attr_s("activation", "hard_swish"));
    const Tensor r = random_tensor(DType::kFloat32, must_run("Conv", {x, w}, attrs_of(c)).shape().dims(), 20);
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b, r}, .attrs = attrs},
                         {1, 2});
    if (c.x.size() != 4 || c.M % 16 != 0) continue;
    std::vector<ir::Attribute> blocked = attrs_of(c);
    blocked.push_back(attr_s("activation", "relu"));
    blocked.push_back(attr_s("output_layout", "NCHW16c"));
    expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b}, .attrs = blocked},
                         {1, 2});
  }
}

// A channel-blocked Y goes through the thread's scratch: binding grows it, so the bound form's first run
// on the binding thread allocates nothing even when that thread ran no chunk of it before (CI once saw one
// allocation there when the pool's workers had taken every chunk of the runs before).
TEST(PointwiseConv, BindingGrowsTheBindingThreadsScratch) {
  const Case c = cases()[1];  // 16 -> 48, 13 x 13
  const Tensor x = random_tensor(DType::kFloat32, c.x, 17), w = random_tensor(DType::kFloat32, w_dims(c), 18);
  std::vector<ir::Attribute> blocked = attrs_of(c);
  blocked.push_back(attr_s("output_layout", "NCHW16c"));
  expect_first_bound_run_on_a_new_thread_allocates_nothing(
      NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w}, .attrs = blocked}, {1});
}

}  // namespace
}  // namespace sdx::test
