#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fused_test_util.h"

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

// 1-D and 2-D ConvTranspose run conv_transpose_2d; 3-D the table-driven N-D path. A 2-D case run as
// 3-D with a depth of 1 must give the same values: strides, pads, dilations, output_padding,
// groups, bias, and a column buffer cut into bands of input rows (the last case).
TEST(NnConvTranspose, TwoDMatchesTheNdPath) {
  struct Case {
    std::vector<int64_t> x, w;
    std::vector<int64_t> strides, pads, dilations, opad;
    int64_t group;
  };
  const std::vector<Case> cases = {
      {{1, 24, 9, 11}, {24, 24, 2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0}, 1},  // the OCR detector's upsampling
      {{2, 5, 7, 6}, {5, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, 1},
      {{1, 4, 5, 8}, {4, 2, 3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 1}, {1, 2}, 2},
      {{1, 6, 4, 4}, {6, 1, 4, 4}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {0, 0}, 6},
      {{1, 64, 40, 70}, {64, 64, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, 1},  // bands
  };
  auto rand = [](std::vector<int64_t> dims, unsigned seed) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 2654435761u + seed) % 2001) / 1000.f - 1.f;
    return f32(v, dims);
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(Shape(c.x).to_string() + " " + Shape(c.w).to_string());
    const Tensor x = rand(c.x, 1), w = rand(c.w, 2), b = rand({c.w[1] * c.group}, 3);
    std::vector<ir::Attribute> attrs = {attr_ints("strides", c.strides), attr_ints("pads", c.pads),
                                        attr_ints("dilations", c.dilations), attr_ints("output_padding", c.opad),
                                        attr_i("group", c.group)};
    auto y = run_node("ConvTranspose", {x, w, b}, attrs, 11);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    // The same as 3-D with depth 1.
    std::vector<int64_t> x3 = c.x, w3 = c.w;
    x3.insert(x3.begin() + 2, 1);
    w3.insert(w3.begin() + 2, 1);
    const Tensor xx = x.reshaped(Shape(x3)), ww = w.reshaped(Shape(w3));
    std::vector<ir::Attribute> attrs3 = {
        attr_ints("strides", {1, c.strides[0], c.strides[1]}),
        attr_ints("pads", {0, c.pads[0], c.pads[1], 0, c.pads[2], c.pads[3]}),
        attr_ints("dilations", {1, c.dilations[0], c.dilations[1]}),
        attr_ints("output_padding", {0, c.opad[0], c.opad[1]}), attr_i("group", c.group)};
    auto y3 = run_node("ConvTranspose", {xx, ww, b}, attrs3, 11);
    ASSERT_TRUE(y3.is_ok()) << y3.status().to_string();
    const Tensor& a = (*y)[0];
    const Tensor& r = (*y3)[0];
    ASSERT_EQ(a.numel(), r.numel());
    for (int64_t i = 0; i < a.numel(); ++i)
      ASSERT_NEAR(a.data<float>()[i], r.data<float>()[i], 1e-5 * (1 + std::fabs(r.data<float>()[i]))) << i;
  }
}

// The reference convolution (3-D, small 1-D, double, float16) has a bound form too
// (conv/conv_reference.h): it equals run() bit for bit and allocates nothing per call.
TEST(NnConv, ReferencePathHasABoundForm) {
  const Tensor x3 = random_tensor(DType::kFloat32, {1, 3, 5, 6, 4}, 1), w3 = random_tensor(DType::kFloat32, {4, 3, 2, 3, 2}, 2);
  expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x3, w3}, .attrs = {attr_ints("pads", {1, 0, 1, 0, 1, 1})}}, {1});
  const Tensor x1 = random_tensor(DType::kFloat32, {2, 3, 11}, 3), w1 = random_tensor(DType::kFloat32, {5, 3, 3}, 4);
  const Tensor b1 = random_tensor(DType::kFloat32, {5}, 5);
  expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x1, w1, b1}, .attrs = {attr_ints("pads", {1, 1})}}, {1, 2});
  expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {x1, w1}});  // weights that change between calls
  const Tensor xd = random_tensor(DType::kFloat64, {1, 4, 6, 6}, 6), wd = random_tensor(DType::kFloat64, {4, 4, 3, 3}, 7);
  expect_bound_matches(NodeSpec{.op = "Conv", .inputs = {xd, wd}}, {1});
  const Tensor xh = random_tensor(DType::kFloat16, {1, 4, 6, 6}, 8), wh = random_tensor(DType::kFloat16, {4, 4, 3, 3}, 9);
  expect_bound_matches(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {xh, wh},
                                .attrs = {attr_s("activation", "relu")}},
                       {1});
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
