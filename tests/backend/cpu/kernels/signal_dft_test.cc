#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(DFTKernel, ForwardRealSignal) {
  auto ys = run_node("DFT", {f32({1, 2, 3, 4}, {1, 4, 1})}, {attr_i("axis", 1)}, 17);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {10, 0, -2, 2, -2, 0, -2, -2});
}

TEST(DFTKernel, OnesidedInverseRoundTrip) {
  // irfft of the half spectrum of [1, 2, 3, 4].
  auto ys = run_node("DFT", {f32({10, 0, -2, 2, -2, 0}, {1, 3, 2})}, {attr_i("axis", 1), attr_i("inverse", 1), attr_i("onesided", 1)}, 17);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {1, 2, 3, 4});
}

TEST(DFTKernel, MixedRadixMatchesDirectSum) {
  // Complex input exercises the float FFT: radix 2, 3, 4, 5 and generic factors.
  for (int64_t n : {1, 2, 3, 6, 7, 8, 12, 15, 16, 30, 49}) {
    std::vector<float> x(static_cast<size_t>(2 * n));
    for (int64_t t = 0; t < n; ++t) x[2 * t] = std::sin(0.3f * t + 1), x[2 * t + 1] = std::cos(0.7f * t);
    for (int inverse = 0; inverse < 2; ++inverse) {
      auto ys = run_node("DFT", {f32(x, {1, n, 2})}, {attr_i("axis", 1), attr_i("inverse", inverse)}, 17);
      ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
      std::vector<float> want(static_cast<size_t>(2 * n));
      const double sign = inverse ? 1.0 : -1.0;
      for (int64_t k = 0; k < n; ++k) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < n; ++t) {
          const double a = sign * 2 * M_PI * static_cast<double>(k * t % n) / n;
          re += x[2 * t] * std::cos(a) - x[2 * t + 1] * std::sin(a);
          im += x[2 * t] * std::sin(a) + x[2 * t + 1] * std::cos(a);
        }
        want[2 * k] = static_cast<float>(inverse ? re / n : re);
        want[2 * k + 1] = static_cast<float>(inverse ? im / n : im);
      }
      SCOPED_TRACE("n=" + std::to_string(n) + " inverse=" + std::to_string(inverse));
      expect_near((*ys)[0], want, 1e-4f);
    }
  }
}

TEST(DFTKernel, RejectsBadComplexAxis) {
  EXPECT_FALSE(run_node("DFT", {f32({1, 2, 3}, {1, 1, 3})}, {attr_i("axis", 1)}, 17).is_ok());
}

TEST(STFTKernel, TwoFrames) {
  auto ys = run_node("STFT", {f32({1, 2, 3, 4}, {1, 4, 1}), i64({2}, {}), Tensor(), i64({2}, {})}, {}, 17);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].shape(), (Shape{1, 2, 2, 2}));
  expect_near((*ys)[0], {3, 0, -1, 0, 7, 0, -1, 0});
}

}  // namespace
}  // namespace sdx::test
