#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(RotaryEmbeddingKernel, RotatesByQuarterTurn) {
  // cos = 0, sin = 1: (x1, x2) -> (-x2, x1).
  auto ys = run_node("RotaryEmbedding", {f32({1, 0}, {1, 1, 1, 2}), f32({0}, {1, 1}), f32({1}, {1, 1}), i64({0}, {1, 1})}, {}, 23);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {0, 1});
}

TEST(RotaryEmbeddingKernel, PartialRotationKeepsTail) {
  auto ys = run_node("RotaryEmbedding", {f32({1, 2, 3, 4}, {1, 1, 1, 4}), f32({0}, {1, 1, 1}), f32({1}, {1, 1, 1})},
                     {attr_i("rotary_embedding_dim", 2)}, 23);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {-2, 1, 3, 4});
}

TEST(RotaryEmbeddingKernel, RejectsOutOfRangePosition) {
  EXPECT_FALSE(run_node("RotaryEmbedding", {f32({1, 0}, {1, 1, 1, 2}), f32({0}, {1, 1}), f32({1}, {1, 1}), i64({5}, {1, 1})}, {}, 23).is_ok());
}

}  // namespace
}  // namespace sdx::test
