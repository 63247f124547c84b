#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorGather, GatherNegativeIndices) {
  auto ys = run_node("Gather", {f32({1, 2, 3, 4, 5, 6}, {3, 2}), i64({-1, 0}, {2})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{5, 6, 1, 2}));
}

TEST(TensorGather, OutOfRangeIndicesFail) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_FALSE(run_node("Gather", {x, i64({3}, {1})}).is_ok());
  EXPECT_FALSE(run_node("GatherElements", {x, i64({0, -4}, {1, 2})}).is_ok());
  EXPECT_FALSE(run_node("GatherND", {x, i64({1, 2}, {1, 2})}).is_ok());
}

TEST(TensorGather, GatherElementsAxis1) {
  auto ys = run_node("GatherElements", {f32({1, 2, 3, 4}, {2, 2}), i64({0, 0, 1, 0}, {2, 2})}, {attr_i("axis", 1)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 1, 4, 3}));
}

TEST(TensorGather, GatherNDBatchDims) {
  // data [2, 2, 2], batch_dims 1, one index tuple per batch.
  auto ys = run_node("GatherND", {f32({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}), i64({1, 0}, {2, 1})}, {attr_i("batch_dims", 1)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{2, 3, 4, 5}));
}

TEST(TensorGather, OneHotNegativeAndOutOfRange) {
  auto ys = run_node("OneHot", {i64({-1, 5}, {2}), i64({3}, {}), f32({0, 1}, {2})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{0, 0, 1, 0, 0, 0}));
  EXPECT_FALSE(run_node("OneHot", {i64({0}, {1}), i64({3}, {}), f32({0, 1, 2}, {3})}).is_ok());
}

}  // namespace
}  // namespace sdx::test
