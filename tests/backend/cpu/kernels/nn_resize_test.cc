#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnResize, NearestUpsampleByScales) {
  auto y = run_node("Resize", {f32({1, 2}, {1, 2}), Tensor(), f32({1, 2}, {2})}, {attr_s("mode", "nearest")}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 4}));
  expect_near(values<float>((*y)[0]), {1, 1, 2, 2});
}

TEST(NnResize, LinearAlignCornersBySizes) {
  auto y = run_node("Resize", {f32({0, 3}, {1, 2}), Tensor(), Tensor(), i64({1, 4}, {2})},
                    {attr_s("mode", "linear"), attr_s("coordinate_transformation_mode", "align_corners")}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {0, 1, 2, 3});
}

TEST(NnResize, UpsampleOpset9) {
  auto y = run_node("Upsample", {f32({1, 2}, {1, 2}), f32({1, 2}, {2})}, {attr_s("mode", "nearest")}, 9);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {1, 1, 2, 2});
}

// Nearest resizes run as a gather (resize_nearest): every output element must be the input element the
// ONNX formulas pick (source coordinate per coordinate_transformation_mode, then nearest_mode's
// rounding, clamped), per axis, for upsampling and downsampling, 3-D to 5-D, several element types.
// length_resized is scale * length_original, as in onnx.reference (not the rounded output size).
int64_t nearest_source(int64_t o, int64_t in, double scale, const std::string& ct, const std::string& nm) {
  const double resized = scale * double(in);
  double x = 0;
  if (ct == "asymmetric") x = o / scale;
  else if (ct == "half_pixel") x = (o + 0.5) / scale - 0.5;
  else if (ct == "pytorch_half_pixel") x = resized > 1 ? (o + 0.5) / scale - 0.5 : -0.5;
  else if (ct == "align_corners") x = resized == 1 ? 0 : o * double(in - 1) / (resized - 1);
  double r = 0;
  const double f = std::floor(x);
  if (nm == "floor") r = f;
  else if (nm == "ceil") r = std::ceil(x);
  else if (x - f == 0.5) r = nm == "round_prefer_floor" ? f : f + 1;
  else r = std::round(x);
  return std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(r), 0), in - 1);
}

TEST(NnResize, NearestPicksTheElementTheFormulasPick) {
  struct Case {
    std::vector<int64_t> in;
    std::vector<float> scales;
  };
  const std::vector<Case> cases = {
      {{1, 3, 5, 7}, {1, 1, 2, 2}},       // upsample x2 (the detection necks)
      {{2, 3, 6, 9}, {1, 1, 0.5f, 0.7f}},  // downsample
      {{1, 2, 4, 5}, {1, 1, 3, 1.5f}},
      {{2, 7, 11}, {1, 2.5f, 0.4f}},      // 3-D
      {{1, 1, 2, 3, 4}, {1, 1, 2, 2, 2}},  // 5-D
      {{3, 4, 5}, {2, 1, 1}},              // an outer axis
  };
  for (const std::string ct : {"asymmetric", "half_pixel", "pytorch_half_pixel", "align_corners"}) {
    for (const std::string nm : {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(ct + ", " + nm + ", " + Shape(c.in).to_string());
        const int r = static_cast<int>(c.in.size());
        int64_t n = 1;
        for (int64_t d : c.in) n *= d;
        // int64 values past 2^53 (a double could not hold them) and their own flat index in the low bits.
        std::vector<int64_t> xv(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) xv[static_cast<size_t>(i)] = (int64_t{1} << 60) + i;
        auto y = run_node("Resize", {i64(xv, c.in), Tensor(), f32(c.scales, {r})},
                          {attr_s("mode", "nearest"), attr_s("coordinate_transformation_mode", ct),
                           attr_s("nearest_mode", nm)},
                          13);
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        const Tensor& t = (*y)[0];
        std::vector<int64_t> out(static_cast<size_t>(r));
        for (int a = 0; a < r; ++a) {
          out[a] = static_cast<int64_t>(std::floor(double(c.scales[a]) * double(c.in[a])));
          ASSERT_EQ(t.shape()[a], out[a]);
        }
        for (int64_t i = 0; i < t.numel(); ++i) {
          int64_t rem = i, src = 0, stride = 1;
          for (int a = r - 1; a >= 0; --a) {
            const int64_t o = rem % out[a];
            rem /= out[a];
            src += nearest_source(o, c.in[a], c.scales[a], ct, nm) * stride;
            stride *= c.in[a];
          }
          ASSERT_EQ(t.data<int64_t>()[i], (int64_t{1} << 60) + src) << "output element " << i;
        }
        // Other widths give the same picks.
        std::vector<float> fv(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) fv[static_cast<size_t>(i)] = static_cast<float>(i);
        auto yf = run_node("Resize", {f32(fv, c.in), Tensor(), f32(c.scales, {r})},
                           {attr_s("mode", "nearest"), attr_s("coordinate_transformation_mode", ct),
                            attr_s("nearest_mode", nm)},
                           13);
        ASSERT_TRUE(yf.is_ok()) << yf.status().to_string();
        for (int64_t i = 0; i < t.numel(); ++i)
          ASSERT_EQ(static_cast<int64_t>((*yf)[0].data<float>()[i]), t.data<int64_t>()[i] - (int64_t{1} << 60));
      }
    }
  }
}

TEST(NnResize, RejectsBothScalesAndSizes) {
  auto y = run_node("Resize", {f32({1, 2}, {1, 2}), Tensor(), f32({1, 2}, {2}), i64({1, 4}, {2})}, {}, 13);
  EXPECT_FALSE(y.is_ok());
}

TEST(NnResize, RejectsBadMode) {
  auto y = run_node("Resize", {f32({1, 2}, {1, 2}), Tensor(), f32({1, 2}, {2})}, {attr_s("mode", "area")}, 13);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx
