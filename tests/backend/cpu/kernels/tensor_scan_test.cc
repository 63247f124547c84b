#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorScan, CumSumExclusiveReverse) {
  auto ys = run_node("CumSum", {f32({1, 2, 3}, {3}), i64({0}, {})}, {attr_i("exclusive", 1), attr_i("reverse", 1)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{5, 3, 0}));
}

TEST(TensorScan, CumSumBadAxisFails) {
  EXPECT_FALSE(run_node("CumSum", {f32({1, 2, 3}, {3}), i64({1}, {})}).is_ok());
}

TEST(TensorScan, TriluLowerWithK) {
  auto ys = run_node("Trilu", {f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}), i64({-1}, {})}, {attr_i("upper", 0)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_FALSE(run_node("Trilu", {f32({1, 2}, {2})}).is_ok());
}

TEST(TensorScan, ReverseSequenceBatchMajor) {
  auto ys = run_node("ReverseSequence", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), i64({2, 3}, {2})},
                     {attr_i("batch_axis", 0), attr_i("time_axis", 1)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{2, 1, 3, 6, 5, 4}));
  EXPECT_FALSE(run_node("ReverseSequence", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), i64({4, 1}, {2})},
                        {attr_i("batch_axis", 0), attr_i("time_axis", 1)})
                   .is_ok());
}

TEST(TensorScan, Col2ImOverlappingBlocksSum) {
  // 1-D image of 3, block 2, stride 1: blocks cover [0,1] and [1,2]; pixel 1 gets both.
  auto ys = run_node("Col2Im", {f32({1, 2, 10, 20}, {1, 2, 2}), i64({3}, {1}), i64({2}, {1})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 12, 20}));
  EXPECT_FALSE(run_node("Col2Im", {f32({1, 2, 10}, {1, 1, 3}), i64({3}, {1}), i64({2}, {1})}).is_ok());
}

}  // namespace
}  // namespace sdx::test
