#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorScatterKernel, WritesAtIndex) {
  auto ys = run_node("TensorScatter", {f32({0, 0, 0}, {1, 3, 1}), f32({7}, {1, 1, 1}), i64({2}, {1})}, {}, 24);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {0, 0, 7});
}

TEST(TensorScatterKernel, CircularWraps) {
  auto ys = run_node("TensorScatter", {f32({0, 0, 0}, {1, 3, 1}), f32({7, 8}, {1, 2, 1}), i64({2}, {1})}, {attr_s("mode", "circular")}, 24);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {8, 0, 7});
}

TEST(TensorScatterKernel, RejectsOverflowInLinearMode) {
  EXPECT_FALSE(run_node("TensorScatter", {f32({0, 0, 0}, {1, 3, 1}), f32({7, 8}, {1, 2, 1}), i64({2}, {1})}, {}, 24).is_ok());
}

}  // namespace
}  // namespace sdx::test
