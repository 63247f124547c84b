#include "reduce_test_util.h"

namespace sdx {
namespace {
using namespace reduce_test;

TEST(ReduceArg, ArgMaxFirstAndLastIndex) {
  Tensor x = f32({1, 5, 5, 2, 0, 0}, {2, 3});
  auto first = run("ArgMax", {x}, {attr_int("axis", 1)}, 13);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ((*first)[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(vals<int64_t>((*first)[0]), (std::vector<int64_t>{1, 0}));
  auto last = run("ArgMax", {x}, {attr_int("axis", 1), attr_int("select_last_index", 1), attr_int("keepdims", 0)}, 13);
  ASSERT_TRUE(last.is_ok());
  EXPECT_EQ(vals<int64_t>((*last)[0]), (std::vector<int64_t>{2, 0}));
}

TEST(ReduceArg, ArgMinAxis0) {
  auto y = run("ArgMin", {f32({3, 1, 2, 4}, {2, 2})}, {attr_int("keepdims", 0)}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(vals<int64_t>((*y)[0]), (std::vector<int64_t>{1, 0}));
}

TEST(ReduceArg, BadAxisAndEmptyAxisAreErrors) {
  EXPECT_FALSE(run("ArgMax", {f32({1, 2}, {2})}, {attr_int("axis", 2)}, 13).is_ok());
  EXPECT_FALSE(run("ArgMax", {f32({}, {2, 0})}, {attr_int("axis", 1)}, 13).is_ok());
}

}  // namespace
}  // namespace sdx
