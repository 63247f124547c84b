// Tests for src/backend/cpu/kernels/quant_conv.cc (ConvInteger, QLinearConv).
#include <array>
#include <random>
#include <string>
#include <vector>

#include "bound_test_util.h"
#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(ConvIntegerKernel, SubtractsZeroPointBeforeSumming) {
  Tensor x = make<uint8_t>(DType::kUint8, {2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 1, 3, 3});
  Tensor w = make<uint8_t>(DType::kUint8, {1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor xz = make<uint8_t>(DType::kUint8, {1}, {});
  auto y = run_node("ConvInteger", {x, w, xz}, {}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{12, 16, 24, 28}));
}

TEST(ConvIntegerKernel, PaddingContributesZeroAfterZeroPoint) {
  Tensor x = make<uint8_t>(DType::kUint8, {5}, {1, 1, 1, 1});
  Tensor w = make<uint8_t>(DType::kUint8, {1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor xz = make<uint8_t>(DType::kUint8, {1}, {});
  auto y = run_node("ConvInteger", {x, w, xz}, {attr_ints("pads", {1, 1, 1, 1})}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{4, 4, 4, 4}));
}

TEST(ConvIntegerKernel, ChannelMismatchIsAnError) {
  Tensor x = make<uint8_t>(DType::kUint8, {}, {1, 2, 3, 3});
  Tensor w = make<uint8_t>(DType::kUint8, {}, {1, 3, 2, 2});
  EXPECT_FALSE(run_node("ConvInteger", {x, w}, {}, 10).is_ok());
}

TEST(QLinearConvKernel, RequantizesWithBias) {
  Tensor x = make<uint8_t>(DType::kUint8, {10, 20}, {1, 1, 1, 2});
  Tensor xs = make<float>(DType::kFloat32, {0.5f}, {});
  Tensor z0 = make<uint8_t>(DType::kUint8, {0}, {});
  Tensor w = make<uint8_t>(DType::kUint8, {2}, {1, 1, 1, 1});
  Tensor ys = make<float>(DType::kFloat32, {1.f}, {});
  Tensor yz = make<uint8_t>(DType::kUint8, {3}, {});
  Tensor bias = make<int32_t>(DType::kInt32, {4}, {1});
  auto y = run_node("QLinearConv", {x, xs, z0, w, xs, z0, ys, yz, bias}, {}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // (10*2 + 4) * 0.25 + 3 = 9; (20*2 + 4) * 0.25 + 3 = 14
  EXPECT_EQ(values<uint8_t>((*y)[0]), (std::vector<uint8_t>{9, 14}));
}

TEST(QLinearConvKernel, BadGroupIsAnError) {
  Tensor x = make<uint8_t>(DType::kUint8, {}, {1, 1, 2, 2});
  Tensor s = make<float>(DType::kFloat32, {1.f}, {});
  Tensor z = make<uint8_t>(DType::kUint8, {0}, {});
  Tensor w = make<uint8_t>(DType::kUint8, {}, {1, 1, 1, 1});
  EXPECT_FALSE(run_node("QLinearConv", {x, s, z, w, s, z, s, z}, {attr_i("group", 0)}, 10).is_ok());
}

// Direct int64 reference of ConvInteger for 2-D, one group.
std::vector<int32_t> conv_reference(const std::vector<int>& x, const std::vector<int>& w, int xz, const std::vector<int>& wz,
                                    int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t KH, int64_t KW,
                                    std::array<int64_t, 2> s, std::array<int64_t, 2> d, std::array<int64_t, 4> p,
                                    int64_t OH, int64_t OW) {
  std::vector<int32_t> y(static_cast<size_t>(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += int64_t{x[static_cast<size_t>(((n * C + c) * H + ih) * W + iw)] - xz} *
                       (w[static_cast<size_t>(((m * C + c) * KH + kh) * KW + kw)] - wz[wz.size() == 1 ? 0 : static_cast<size_t>(m)]);
              }
          y[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] = static_cast<int32_t>(acc);
        }
  return y;
}

// The integer-GEMM path (2-D, one group) against the direct reference: uint8 and int8 data and weights,
// per-tensor and per-channel weight zero points, strides, dilations, asymmetric pads, channel counts
// that are not multiples of 4 or 16, two images; and a grouped convolution (the direct loop) still right.
TEST(ConvIntegerKernel, GemmPathMatchesDirectSums) {
  std::mt19937 gen(13);
  struct Case {
    DType xt, wt;
    int64_t N, C, H, W, M, KH, KW;
    std::array<int64_t, 2> s, d;
    std::array<int64_t, 4> p;
    bool per_channel;
  };
  const std::vector<Case> cases = {
      {DType::kUint8, DType::kUint8, 1, 1, 9, 11, 24, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, false},
      {DType::kUint8, DType::kInt8, 2, 5, 7, 6, 70, 3, 2, {1, 2}, {2, 1}, {2, 0, 1, 1}, true},
      {DType::kInt8, DType::kUint8, 1, 19, 5, 5, 3, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},
      // Windows from the pixel-major copy (8 channels or more): 3x3 with 24 channels, stride 2, dilation 2,
      // asymmetric pads, int8 x; 9 channels (a tail after 8), 5x3, overhanging on every side.
      {DType::kInt8, DType::kInt8, 2, 24, 11, 13, 7, 3, 3, {2, 1}, {1, 2}, {1, 0, 2, 3}, true},
      {DType::kUint8, DType::kUint8, 1, 9, 6, 19, 20, 5, 3, {1, 1}, {1, 1}, {2, 1, 2, 1}, false},
      // 1x1 with 24 channels (the 8-channel transposes) over 63 pixels (16-pixel blocks and a tail), 2 images.
      {DType::kUint8, DType::kInt8, 2, 24, 7, 9, 5, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {DType::kInt8, DType::kInt8, 1, 3, 8, 8, 17, 5, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.xt)) + " x " + dtype_name(c.wt) + " C=" + std::to_string(c.C) + " M=" + std::to_string(c.M));
    auto draw = [&](DType t, int64_t n) { return random_8bit(t, n, gen); };
    const std::vector<int> x = draw(c.xt, c.N * c.C * c.H * c.W), w = draw(c.wt, c.M * c.C * c.KH * c.KW);
    const std::vector<int> xz = draw(c.xt, 1), wz = draw(c.wt, c.per_channel ? c.M : 1);
    const int64_t OH = (c.H + c.p[0] + c.p[2] - (c.KH - 1) * c.d[0] - 1) / c.s[0] + 1;
    const int64_t OW = (c.W + c.p[1] + c.p[3] - (c.KW - 1) * c.d[1] - 1) / c.s[1] + 1;
    auto y = run_node("ConvInteger",
                      {tensor_8bit(c.xt, x, {c.N, c.C, c.H, c.W}), tensor_8bit(c.wt, w, {c.M, c.C, c.KH, c.KW}), tensor_8bit(c.xt, xz, {}),
                       tensor_8bit(c.wt, wz, c.per_channel ? std::vector<int64_t>{c.M} : std::vector<int64_t>{})},
                      {attr_ints("strides", {c.s[0], c.s[1]}), attr_ints("dilations", {c.d[0], c.d[1]}),
                       attr_ints("pads", {c.p[0], c.p[1], c.p[2], c.p[3]})},
                      10);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    ASSERT_EQ((*y)[0].shape(), (Shape{c.N, c.M, OH, OW}));
    EXPECT_EQ(values<int32_t>((*y)[0]),
              conv_reference(x, w, xz[0], wz, c.N, c.C, c.H, c.W, c.M, c.KH, c.KW, c.s, c.d, c.p, OH, OW));
  }
}

// The bound form (weights packed once) gives run()'s sums without allocating, with x and its zero point
// changed between calls; a non-constant weight or a grouped convolution has no bound form.
TEST(ConvIntegerKernel, BoundFormMatchesRun) {
  std::vector<uint8_t> xv(2 * 3 * 6 * 7), wv(20 * 3 * 3 * 3);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<uint8_t>((i * 37) % 251);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<uint8_t>((i * 91) % 253);
  const Tensor x = make(DType::kUint8, xv, {2, 3, 6, 7}), w = make(DType::kUint8, wv, {20, 3, 3, 3});
  const Tensor xz = make(DType::kUint8, std::vector<uint8_t>{120}, {}), wz = make(DType::kUint8, std::vector<uint8_t>{131}, {});
  const std::vector<ir::Attribute> attrs = {attr_ints("pads", {1, 0, 1, 2}), attr_ints("strides", {1, 2})};
  expect_bound_matches({.op = "ConvInteger", .opset = 10, .inputs = {x, w, xz, wz}, .attrs = attrs}, {1, 3});
  // 12 channels: windows from the pixel-major copy.
  std::vector<uint8_t> xv12(2 * 12 * 6 * 7), wv12(5 * 12 * 3 * 3);
  for (size_t i = 0; i < xv12.size(); ++i) xv12[i] = static_cast<uint8_t>((i * 41) % 251);
  for (size_t i = 0; i < wv12.size(); ++i) wv12[i] = static_cast<uint8_t>((i * 83) % 253);
  expect_bound_matches({.op = "ConvInteger", .opset = 10,
                        .inputs = {make(DType::kUint8, xv12, {2, 12, 6, 7}), make(DType::kUint8, wv12, {5, 12, 3, 3}), xz, wz},
                        .attrs = attrs},
                       {1, 3});
  expect_no_bound_form({.op = "ConvInteger", .opset = 10, .inputs = {x, w, xz, wz}, .attrs = attrs}, {3});
  const Tensor wg = make(DType::kUint8, std::vector<uint8_t>(20 * 1 * 3 * 3, 7), {20, 1, 3, 3});
  const Tensor xg = make(DType::kUint8, std::vector<uint8_t>(20 * 5 * 5, 9), {1, 20, 5, 5});
  expect_no_bound_form({.op = "ConvInteger", .opset = 10, .inputs = {xg, wg}, .attrs = {attr_i("group", 20)}}, {1});
}

}  // namespace
}  // namespace sdx
