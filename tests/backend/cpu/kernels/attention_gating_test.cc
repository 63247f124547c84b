#include <gtest/gtest.h>

#include "seq_test_util.h"

namespace sdx::seq_test {
namespace {

TEST(SwiGLUKernel, GatesWithSwish) {
  auto ys = run("SwiGLU", {f32({0, 1}, {2}), f32({1, 2}, {2})}, {}, 1, 28);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {0.0f, 2.0f / (1.0f + std::exp(-1.0f))});
}

TEST(SwiGLUKernel, RejectsShapeMismatch) {
  EXPECT_FALSE(run("SwiGLU", {f32({0, 1}, {2}), f32({1}, {1})}, {}, 1, 28).is_ok());
}

}  // namespace
}  // namespace sdx::seq_test
