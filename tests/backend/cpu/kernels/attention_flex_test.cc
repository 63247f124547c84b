#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(FlexAttentionKernel, PlainSoftmaxAttention) {
  auto ys = run_node({.op = "FlexAttention",
                       .domain = "ai.onnx.preview",
                       .opset = 1,
                       .inputs = {f32({std::log(3.0f)}, {1, 1, 1, 1}), f32({0, 1}, {1, 1, 2, 1}), f32({4, 8}, {1, 1, 2, 1})}});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {7.0f});
}

TEST(FlexAttentionKernel, RejectsRank3) {
  EXPECT_FALSE(run_node({.op = "FlexAttention",
                         .domain = "ai.onnx.preview",
                         .opset = 1,
                         .inputs = {f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1})}}).is_ok());
}

}  // namespace
}  // namespace sdx::test
