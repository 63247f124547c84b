#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(SwiGLUKernel, GatesWithSwish) {
  auto ys = run_node("SwiGLU", {f32({0, 1}, {2}), f32({1, 2}, {2})}, {}, 28);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {0.0f, 2.0f / (1.0f + std::exp(-1.0f))});
}

TEST(SwiGLUKernel, RejectsShapeMismatch) {
  EXPECT_FALSE(run_node("SwiGLU", {f32({0, 1}, {2}), f32({1}, {1})}, {}, 28).is_ok());
}

}  // namespace
}  // namespace sdx::test
