#include <gtest/gtest.h>

#include "seq_test_util.h"

namespace sdx::seq_test {
namespace {

TEST(FlexAttentionKernel, PlainSoftmaxAttention) {
  auto ys = run("FlexAttention", {f32({std::log(3.0f)}, {1, 1, 1, 1}), f32({0, 1}, {1, 1, 2, 1}), f32({4, 8}, {1, 1, 2, 1})}, {}, 1, 1,
                "ai.onnx.preview");
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {7.0f});
}

TEST(FlexAttentionKernel, RejectsRank3) {
  EXPECT_FALSE(run("FlexAttention", {f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1})}, {}, 1, 1, "ai.onnx.preview").is_ok());
}

}  // namespace
}  // namespace sdx::seq_test
