#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnConv, PaddedTwoByTwoKernelWithBias) {
  // X 1x1x2x2 = [[1, 2], [3, 4]], W = ones 2x2, pads 1 on the end only, bias 10.
  auto y = run_node("Conv", {f32({1, 2, 3, 4}, {1, 1, 2, 2}), f32({1, 1, 1, 1}, {1, 1, 2, 2}), f32({10}, {1})},
                    {attr_ints("pads", {0, 0, 1, 1})}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 1, 2, 2}));
  expect_near(values<float>((*y)[0]), {20, 16, 17, 14});
}

TEST(NnConv, GroupedOneDimensional) {
  // Two channels, group 2: each output channel scales its own input channel.
  auto y = run_node("Conv", {f32({1, 2, 3, 4, 5, 6}, {1, 2, 3}), f32({2, -1}, {2, 1, 1})}, {attr_i("group", 2)}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {2, 4, 6, -4, -5, -6});
}

TEST(NnConv, RejectsChannelMismatch) {
  auto y = run_node("Conv", {f32({1, 2, 3, 4}, {1, 1, 2, 2}), f32({1, 1, 1, 1, 1, 1, 1, 1}, {1, 2, 2, 2})}, {}, 11);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("channels"), std::string::npos) << y.status().to_string();
}

TEST(NnConvTranspose, StrideTwoScatters) {
  // X 1x1x2 = [1, 2], W 1x1x2 = [1, 10], stride 2 -> [1, 10, 2, 20].
  auto y = run_node("ConvTranspose", {f32({1, 2}, {1, 1, 2}), f32({1, 10}, {1, 1, 2})}, {attr_ints("strides", {2})}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {1, 10, 2, 20});
}

TEST(NnConvTranspose, RejectsBadBias) {
  auto y = run_node("ConvTranspose", {f32({1, 2}, {1, 1, 2}), f32({1, 10}, {1, 1, 2}), f32({1, 2}, {2})}, {}, 11);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx

namespace sdx {
namespace {

using namespace test;

TEST(NnConv, PointwiseKernelSkipsIm2col) {
  // 1x1 kernel, two input channels mixed into one output: y = x0 + 2 * x1.
  auto y = run_node("Conv", {f32({1, 2, 3, 10, 20, 30}, {1, 2, 3}), f32({1, 2}, {1, 2, 1})}, {}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {21, 42, 63});
}

}  // namespace
}  // namespace sdx

namespace sdx {
namespace {

using namespace test;

TEST(NnConv, LargeImageIsChunkedConsistently) {
  // All-ones 120x40x40 input, 3x3 all-ones filter, padding 1: each output counts the
  // in-image taps times 120. With 1080 im2col rows the 1600 outputs span two chunks (970 + 630).
  const int64_t C = 120, H = 40, W = 40;
  std::vector<float> x(static_cast<size_t>(C * H * W), 1.0f), w(static_cast<size_t>(C * 9), 1.0f);
  auto y = run_node("Conv", {f32(x, {1, C, H, W}), f32(w, {1, C, 3, 3})}, {attr_ints("pads", {1, 1, 1, 1})}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const std::vector<float> out = values<float>((*y)[0]);
  ASSERT_EQ(out.size(), static_cast<size_t>(H * W));
  EXPECT_FLOAT_EQ(out[0], 4.0f * C);                 // corner
  EXPECT_FLOAT_EQ(out[1], 6.0f * C);                 // edge
  EXPECT_FLOAT_EQ(out[25 * W + 30], 9.0f * C);       // interior, second chunk
  EXPECT_FLOAT_EQ(out[H * W - 1], 4.0f * C);         // last corner
}

}  // namespace
}  // namespace sdx
