#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(AttentionKernel, SoftmaxWeightsValues) {
  // scores = q * k = [0, ln 3] -> probabilities [0.25, 0.75] -> Y = 0.25*4 + 0.75*8.
  auto ys = run_node("Attention", {f32({std::log(3.0f)}, {1, 1, 1, 1}), f32({0, 1}, {1, 1, 2, 1}), f32({4, 8}, {1, 1, 2, 1})}, {}, 23);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {7.0f});
}

TEST(AttentionKernel, CausalMasksFutureKeys) {
  auto ys = run_node("Attention", {f32({0, 0}, {1, 1, 2, 1}), f32({0, 0}, {1, 1, 2, 1}), f32({2, 4}, {1, 1, 2, 1})}, {attr_i("is_causal", 1)}, 23);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {2.0f, 3.0f});
}

TEST(AttentionKernel, FullyMaskedBoolRowIsZero) {
  Tensor mask = make<bool>(DType::kBool, {false, false}, {1, 2});
  auto ys = run_node("Attention", {f32({1}, {1, 1, 1, 1}), f32({1, 2}, {1, 1, 2, 1}), f32({2, 4}, {1, 1, 2, 1}), mask}, {}, 23);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {0.0f});
}

TEST(AttentionKernel, GroupedQuery3DWithPresent) {
  // Two query heads share one KV head with a single key: Y repeats V per head.
  auto ys = run_node("Attention", {f32({1, 2, 3, 4}, {1, 1, 4}), f32({1, 1}, {1, 1, 2}), f32({5, 6}, {1, 1, 2})},
                     {attr_i("q_num_heads", 2), attr_i("kv_num_heads", 1)}, 23, 3);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {5, 6, 5, 6});
  EXPECT_EQ((*ys)[1].shape(), (Shape{1, 1, 1, 2}));
}

TEST(AttentionKernel, RejectsBadInputs) {
  // 3-D inputs need the head-count attributes.
  EXPECT_FALSE(run_node("Attention", {f32({1, 2}, {1, 1, 2}), f32({1, 2}, {1, 1, 2}), f32({1, 2}, {1, 1, 2})}, {}, 23).is_ok());
  // Q and K head sizes differ.
  EXPECT_FALSE(run_node("Attention", {f32({1, 2}, {1, 1, 1, 2}), f32({1, 2, 3}, {1, 1, 1, 3}), f32({1}, {1, 1, 1, 1})}, {}, 23).is_ok());
  // Mask longer than the key sequence.
  EXPECT_FALSE(run_node("Attention", {f32({1}, {1, 1, 1, 1}), f32({1}, {1, 1, 1, 1}), f32({1}, {1, 1, 1, 1}), f32({0, 0}, {1, 2})}, {}, 23).is_ok());
}

}  // namespace
}  // namespace sdx::test
