#include <gtest/gtest.h>

#include "nn_test_util.h"

namespace sdx {
namespace {

using namespace nn_test;

TEST(NnResize, NearestUpsampleByScales) {
  auto y = run("Resize", {f32({1, 2}, {1, 2}), Tensor(), f32({1, 2}, {2})}, {attr_str("mode", "nearest")}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 4}));
  expect_near(vals<float>((*y)[0]), {1, 1, 2, 2});
}

TEST(NnResize, LinearAlignCornersBySizes) {
  auto y = run("Resize", {f32({0, 3}, {1, 2}), Tensor(), Tensor(), i64({1, 4}, {2})},
               {attr_str("mode", "linear"), attr_str("coordinate_transformation_mode", "align_corners")}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(vals<float>((*y)[0]), {0, 1, 2, 3});
}

TEST(NnResize, UpsampleOpset9) {
  auto y = run("Upsample", {f32({1, 2}, {1, 2}), f32({1, 2}, {2})}, {attr_str("mode", "nearest")}, 9);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(vals<float>((*y)[0]), {1, 1, 2, 2});
}

TEST(NnResize, RejectsBothScalesAndSizes) {
  auto y = run("Resize", {f32({1, 2}, {1, 2}), Tensor(), f32({1, 2}, {2}), i64({1, 4}, {2})}, {}, 13);
  EXPECT_FALSE(y.is_ok());
}

TEST(NnResize, RejectsBadMode) {
  auto y = run("Resize", {f32({1, 2}, {1, 2}), Tensor(), f32({1, 2}, {2})}, {attr_str("mode", "area")}, 13);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx
