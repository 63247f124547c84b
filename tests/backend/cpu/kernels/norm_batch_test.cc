#include <cmath>
#include <cstdint>
#include <vector>

#include "bound_test_util.h"
#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(NormBatch, Inference) {
  // C=2: channel 0 mean 1 var 4 scale 2 bias 0; channel 1 identity.
  auto y = run_node("BatchNormalization",
                    {f32({3, 5, 1, 7}, {1, 2, 2}), f32({2, 1}, {2}), f32({0, 0}, {2}), f32({1, 0}, {2}), f32({4, 1}, {2})},
                    {attr_f("epsilon", 0.f)}, 15);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {2, 4, 1, 7});
}

// Float32 inference on odd sizes (7 channels, 3 x 5 planes, a batch of 2; rank 2 and 3 too): within two
// float roundings of the double formula, y = x * a + b with a and b rounded to float once; the bound
// form (parameters as initializers) gives the same bits as run().
TEST(NormBatch, FloatInferenceOddSizesAndBoundForm) {
  auto wave = [](int64_t n, float scale, float phase) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.7f * static_cast<float>(i) + phase);
    return v;
  };
  const int64_t C = 7;
  std::vector<float> scale = wave(C, 2.f, 0.1f), bias = wave(C, 1.f, 0.5f), mean = wave(C, 0.5f, 0.9f), var = wave(C, 1.f, 1.3f);
  for (float& v : var) v = v * v + 0.1f;
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, C, 3, 5}, std::vector<int64_t>{3, C}, std::vector<int64_t>{1, C, 37}}) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    const std::vector<float> x = wave(n, 3.f, 0.f);
    const std::vector<Tensor> in = {f32(x, dims), f32(scale, {C}), f32(bias, {C}), f32(mean, {C}), f32(var, {C})};
    auto y = run_node("BatchNormalization", in, {attr_f("epsilon", 1e-3f)}, 15);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const std::vector<float> got = values<float>((*y)[0]);
    const int64_t spatial = n / (dims[0] * C);
    for (int64_t i = 0; i < n; ++i) {
      const size_t c = static_cast<size_t>((i / spatial) % C);
      const double a = scale[c] / std::sqrt(static_cast<double>(var[c]) + static_cast<double>(1e-3f));
      const double want = x[static_cast<size_t>(i)] * a + (bias[c] - mean[c] * a);
      EXPECT_NEAR(got[static_cast<size_t>(i)], want, 4e-7 * (std::abs(want) + std::abs(x[static_cast<size_t>(i)] * a)) + 1e-30) << i;
    }
    expect_bound_matches({.op = "BatchNormalization", .opset = 15, .inputs = in, .attrs = {attr_f("epsilon", 1e-3f)}},
                         {1, 2, 3, 4});
  }
}

TEST(NormBatch, TrainingModeRunningStats) {
  auto y = run_node("BatchNormalization", {f32({1, 3}, {2, 1}), f32({1}, {1}), f32({0}, {1}), f32({0}, {1}), f32({1}, {1})},
                    {attr_f("epsilon", 0.f), attr_f("momentum", 0.5f), attr_i("training_mode", 1)}, 15, 3);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {-1, 1});
  expect_near(values<float>((*y)[1]), {1});  // 0 * 0.5 + 2 * 0.5
  expect_near(values<float>((*y)[2]), {1});  // 1 * 0.5 + 1 * 0.5
}

TEST(NormBatch, Lrn) {
  // size 1: y = x / (1 + 1 * x^2)^1
  auto y = run_node("LRN", {f32({1, 2}, {1, 2, 1, 1})}, {attr_i("size", 1), attr_f("alpha", 1.f), attr_f("beta", 1.f)}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {0.5f, 0.4f});
}

TEST(NormBatch, BadInputsAreErrors) {
  EXPECT_FALSE(run_node("BatchNormalization", {f32({1, 2}, {1, 2}), f32({1}, {1}), f32({0}, {1}), f32({0}, {1}), f32({1}, {1})}, {}, 15).is_ok());
  EXPECT_FALSE(run_node("LRN", {f32({1, 2}, {1, 2, 1, 1})}, {}, 13).is_ok());  // size missing
}

}  // namespace
}  // namespace sdx
