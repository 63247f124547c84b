#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(CausalConvWithStateKernel, ZeroStateAndPresent) {
  auto ys = run_node("CausalConvWithState", {f32({1, 2, 3}, {1, 1, 3}), f32({1, 1}, {1, 1, 2})}, {}, 27, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {1, 3, 5});
  expect_near((*ys)[1], {3});
}

TEST(CausalConvWithStateKernel, UsesPastState) {
  auto ys = run_node("CausalConvWithState", {f32({1, 2, 3}, {1, 1, 3}), f32({1, 1}, {1, 1, 2}), Tensor(), f32({10}, {1, 1, 1})}, {}, 27, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {11, 3, 5});
}

TEST(CausalConvWithStateKernel, RejectsBadState) {
  EXPECT_FALSE(run_node("CausalConvWithState", {f32({1, 2, 3}, {1, 1, 3}), f32({1, 1}, {1, 1, 2}), Tensor(), f32({1, 2}, {1, 1, 2})}, {}, 27, 2).is_ok());
}

}  // namespace
}  // namespace sdx::test
