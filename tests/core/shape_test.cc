#include "core/shape.h"

#include <gtest/gtest.h>

namespace sdx {
namespace {

TEST(Shape, NumelAndString) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_EQ(Shape().numel(), 1);
  EXPECT_EQ(s.size_between(1, 3), 12);
}

TEST(Shape, MakeRejectsOverflowAndNegative) {
  EXPECT_FALSE(Shape::make({int64_t{1} << 40, int64_t{1} << 40}).is_ok());
  EXPECT_FALSE(Shape::make({2, -1}).is_ok());
  EXPECT_TRUE(Shape::make({0, int64_t{1} << 62}).is_ok());
}

TEST(Shape, CheckedArithmetic) {
  EXPECT_FALSE(checked_mul(INT64_MAX, 2).is_ok());
  EXPECT_EQ(checked_mul(6, 7).value(), 42);
  EXPECT_FALSE(checked_add(INT64_MAX, 1).is_ok());
}

TEST(Shape, Broadcast) {
  auto r = broadcast_shapes(Shape{3, 1, 5}, Shape{4, 1});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->dims(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_FALSE(broadcast_shapes(Shape{3}, Shape{4}).is_ok());
}

TEST(Shape, NormalizeAxis) {
  EXPECT_EQ(normalize_axis(-1, 3).value(), 2);
  EXPECT_FALSE(normalize_axis(3, 3).is_ok());
  EXPECT_FALSE(normalize_axis(-4, 3).is_ok());
}

}  // namespace
}  // namespace sdx
