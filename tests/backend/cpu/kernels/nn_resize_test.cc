#include <gtest/gtest.h>

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
