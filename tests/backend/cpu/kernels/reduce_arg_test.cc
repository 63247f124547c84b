#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(ReduceArg, ArgMaxFirstAndLastIndex) {
  Tensor x = f32({1, 5, 5, 2, 0, 0}, {2, 3});
  auto first = run_node("ArgMax", {x}, {attr_i("axis", 1)}, 13);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ((*first)[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(values<int64_t>((*first)[0]), (std::vector<int64_t>{1, 0}));
  auto last = run_node("ArgMax", {x}, {attr_i("axis", 1), attr_i("select_last_index", 1), attr_i("keepdims", 0)}, 13);
  ASSERT_TRUE(last.is_ok());
  EXPECT_EQ(values<int64_t>((*last)[0]), (std::vector<int64_t>{2, 0}));
}

TEST(ReduceArg, ArgMinAxis0) {
  auto y = run_node("ArgMin", {f32({3, 1, 2, 4}, {2, 2})}, {attr_i("keepdims", 0)}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>((*y)[0]), (std::vector<int64_t>{1, 0}));
}

TEST(ReduceArg, BadAxisAndEmptyAxisAreErrors) {
  EXPECT_FALSE(run_node("ArgMax", {f32({1, 2}, {2})}, {attr_i("axis", 2)}, 13).is_ok());
  EXPECT_FALSE(run_node("ArgMax", {f32({}, {2, 0})}, {attr_i("axis", 1)}, 13).is_ok());
}

}  // namespace
}  // namespace sdx
