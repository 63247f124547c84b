#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnGrid, AffineGridIdentityFeedsGridSample) {
  // Identity theta with align_corners: the grid samples every pixel exactly.
  auto grid = run_node("AffineGrid", {f32({1, 0, 0, 0, 1, 0}, {1, 2, 3}), i64({1, 1, 2, 3}, {4})},
                       {attr_i("align_corners", 1)}, 20);
  ASSERT_TRUE(grid.is_ok()) << grid.status().to_string();
  EXPECT_EQ((*grid)[0].shape(), (Shape{1, 2, 3, 2}));
  expect_near(values<float>((*grid)[0]), {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1});
  auto y = run_node("GridSample", {f32({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3}), (*grid)[0]}, {attr_i("align_corners", 1)}, 20);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {1, 2, 3, 4, 5, 6});
}

TEST(NnGrid, GridSampleBorderPadding) {
  // One point far left of a 1x2 image: border padding clamps to the first pixel.
  auto y = run_node("GridSample", {f32({5, 7}, {1, 1, 1, 2}), f32({-3, 0}, {1, 1, 1, 2})},
                    {attr_s("padding_mode", "border")}, 20);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {5});
}

TEST(NnGrid, RejectsGridShapeMismatch) {
  auto y = run_node("GridSample", {f32({5, 7}, {1, 1, 1, 2}), f32({0, 0, 0}, {1, 1, 1, 3})}, {}, 20);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx
