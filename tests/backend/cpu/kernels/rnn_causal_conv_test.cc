#include <gtest/gtest.h>

#include "seq_test_util.h"

namespace sdx::seq_test {
namespace {

TEST(CausalConvWithStateKernel, ZeroStateAndPresent) {
  auto ys = run("CausalConvWithState", {f32({1, 2, 3}, {1, 1, 3}), f32({1, 1}, {1, 1, 2})}, {}, 2, 27);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {1, 3, 5});
  expect_near((*ys)[1], {3});
}

TEST(CausalConvWithStateKernel, UsesPastState) {
  auto ys = run("CausalConvWithState", {f32({1, 2, 3}, {1, 1, 3}), f32({1, 1}, {1, 1, 2}), Tensor(), f32({10}, {1, 1, 1})}, {}, 2, 27);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {11, 3, 5});
}

TEST(CausalConvWithStateKernel, RejectsBadState) {
  EXPECT_FALSE(run("CausalConvWithState", {f32({1, 2, 3}, {1, 1, 3}), f32({1, 1}, {1, 1, 2}), Tensor(), f32({1, 2}, {1, 1, 2})}, {}, 2, 27).is_ok());
}

}  // namespace
}  // namespace sdx::seq_test
