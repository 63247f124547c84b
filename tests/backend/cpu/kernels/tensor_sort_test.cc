#include <cmath>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorSort, TopKTiesByLowerIndex) {
  auto ys = run_node("TopK", {f32({1, 3, 3, 2}, {4}), i64({2}, {1})}, {}, 21, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{3, 3}));
  EXPECT_EQ(values<int64_t>((*ys)[1]), (std::vector<int64_t>{1, 2}));
}

TEST(TensorSort, TopKTooLargeFails) {
  EXPECT_FALSE(run_node("TopK", {f32({1, 2}, {2}), i64({3}, {1})}, {}, 21, 2).is_ok());
}

TEST(TensorSort, UniqueUnsortedAllOutputs) {
  auto ys = run_node("Unique", {f32({2, 1, 1, 3, 4, 3}, {6})}, {attr_i("sorted", 0)}, 21, 4);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>((*ys)[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>((*ys)[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(values<int64_t>((*ys)[3]), (std::vector<int64_t>{1, 2, 2, 1}));
}

TEST(TensorSort, UniqueBadAxisFails) {
  EXPECT_FALSE(run_node("Unique", {f32({1, 2}, {2})}, {attr_i("axis", 1)}).is_ok());
}

TEST(TensorSort, NonZeroCoordinates) {
  auto ys = run_node("NonZero", {f32({0, 1, 2, 0}, {2, 2})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int64_t>((*ys)[0]), (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(TensorSort, NaNDoesNotBreakOrdering) {
  const float nan = std::nanf("");
  auto t = run_node("TopK", {f32({1, nan, 3, nan, 2}, {5}), i64({2}, {1})}, {attr_i("largest", 0)}, 21, 2);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(values<int64_t>((*t)[1]), (std::vector<int64_t>{0, 4}));
  auto u = run_node("Unique", {f32({nan, 1, nan, 1}, {4})}, {});
  ASSERT_TRUE(u.is_ok()) << u.status().to_string();
  EXPECT_EQ((*u)[0].numel(), 2);
}

TEST(TensorSort, TopKOpset1Attribute) {
  auto t = run_node("TopK", {f32({1, 3, 2}, {3})}, {attr_i("k", 1)}, 1, 2);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(values<float>((*t)[0]), (std::vector<float>{3}));
}

}  // namespace
}  // namespace sdx::test
