#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnDetect, NonMaxSuppressionDropsOverlaps) {
  // Boxes 0 and 1 overlap heavily; box 2 is apart.
  const Tensor boxes = f32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6}, {1, 3, 4});
  const Tensor scores = f32({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  auto y = run_node("NonMaxSuppression", {boxes, scores, i64({10}, {1}), f32({0.5f}, {1})}, {}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>((*y)[0]), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
}

TEST(NnDetect, NonMaxSuppressionRejectsBadBoxes) {
  auto y = run_node("NonMaxSuppression", {f32({0, 0, 1}, {1, 1, 3}), f32({1}, {1, 1, 1})}, {}, 11);
  EXPECT_FALSE(y.is_ok());
}

TEST(NnDetect, RoiAlignAveragesConstantImage) {
  const Tensor x = f32(std::vector<float>(16, 3.0f), {1, 1, 4, 4});
  auto y = run_node("RoiAlign", {x, f32({0, 0, 2, 2}, {1, 4}), i64({0}, {1})},
                    {attr_i("output_height", 2), attr_i("output_width", 2)}, 16);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {3, 3, 3, 3});
}

// Found by the onnx_model fuzzer: NaN or huge ROIs were cast to integers (UB) or asked
// for an unbounded number of samples.
TEST(NnDetect, RoiAlignRejectsNonFiniteAndHugeRois) {
  const Tensor x = f32(std::vector<float>(16, 3.0f), {1, 1, 4, 4});
  auto y = run_node("RoiAlign", {x, f32({0, NAN, 2, 2}, {1, 4}), i64({0}, {1})}, {}, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("non-finite"), std::string::npos) << y.status().message();
  y = run_node("RoiAlign", {x, f32({0, 0, 1e30f, 1e30f}, {1, 4}), i64({0}, {1})}, {}, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("too large"), std::string::npos) << y.status().message();
}

TEST(NnDetect, RoiAlignRejectsBadBatchIndex) {
  const Tensor x = f32(std::vector<float>(16, 3.0f), {1, 1, 4, 4});
  auto y = run_node("RoiAlign", {x, f32({0, 0, 2, 2}, {1, 4}), i64({3}, {1})}, {}, 16);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx
