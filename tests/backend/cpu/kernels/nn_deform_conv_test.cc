#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnDeformConv, ZeroOffsetsMatchPlainConv) {
  const Tensor x = f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  const Tensor w = f32({1, 1, 1, 1}, {1, 1, 2, 2});
  const Tensor offset = f32(std::vector<float>(8 * 4, 0.0f), {1, 8, 2, 2});
  auto y = run_node("DeformConv", {x, w, offset}, {}, 19);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {12, 16, 24, 28});
}

TEST(NnDeformConv, HalfPixelOffsetInterpolates) {
  // 1x1 kernel shifted right by 0.5: averages horizontal neighbours (zero beyond the edge).
  const Tensor x = f32({2, 4}, {1, 1, 1, 2});
  const Tensor offset = f32({0, 0, 0.5f, 0.5f}, {1, 2, 1, 2});
  auto y = run_node("DeformConv", {x, f32({1}, {1, 1, 1, 1}), offset}, {}, 19);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {3, 2});
}

TEST(NnDeformConv, RejectsBadOffsetShape) {
  auto y = run_node("DeformConv", {f32({1, 2, 3, 4}, {1, 1, 2, 2}), f32({1}, {1, 1, 1, 1}), f32({0, 0}, {1, 2, 1, 1})}, {},
                    19);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx
