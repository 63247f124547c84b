#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(RecurrentKernel, RnnSingleStep) {
  auto ys = run_node("RNN", {f32({0.5f}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({0}, {1, 1, 1})}, {attr_i("hidden_size", 1)}, 22, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {std::tanh(0.5f)});
  expect_near((*ys)[1], {std::tanh(0.5f)});
}

TEST(RecurrentKernel, LstmZeroWeightsHalveCell) {
  // All gates see 0: i = f = o = 0.5, g = 0, so C = 0.5 * C0 and H = 0.5 * tanh(C).
  Tensor none;
  auto ys = run_node("LSTM", {f32({3}, {1, 1, 1}), f32({0, 0, 0, 0}, {1, 4, 1}), f32({0, 0, 0, 0}, {1, 4, 1}), none, none, none,
                         f32({1}, {1, 1, 1})},
                {attr_i("hidden_size", 1)}, 22, 3);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[1], {0.5f * std::tanh(0.5f)});
  expect_near((*ys)[2], {0.5f});
}

TEST(RecurrentKernel, SequenceLensStopsEarly) {
  // Batch entry 1 has length 0: its Y is zero and its state stays the initial one.
  auto ys = run_node("RNN", {f32({1, 1}, {1, 2, 1}), f32({1}, {1, 1, 1}), f32({0}, {1, 1, 1}), Tensor(), make<int32_t>(DType::kInt32, {1, 0}, {2})},
                     {attr_i("hidden_size", 1)}, 22, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {std::tanh(1.0f), 0.0f});
}

TEST(RecurrentKernel, RejectsBadWeightShape) {
  EXPECT_FALSE(run_node("GRU", {f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({0, 0, 0}, {1, 3, 1})}, {attr_i("hidden_size", 1)}, 22, 2).is_ok());
  EXPECT_FALSE(run_node("RNN", {f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({0}, {1, 1, 1})}, {attr_s("direction", "sideways")}, 22, 2).is_ok());
}

}  // namespace
}  // namespace sdx::test
