#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnPool, MaxPoolWithIndices) {
  auto y = run_node("MaxPool", {f32({1, 5, 3, 2, 9, 0, 4, 4, 8}, {1, 1, 3, 3})},
                    {attr_ints("kernel_shape", {2, 2})}, 12, 2);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {9, 9, 9, 9});
  EXPECT_EQ(values<int64_t>((*y)[1]), (std::vector<int64_t>{4, 4, 4, 4}));
}

TEST(NnPool, AveragePoolCountIncludePad) {
  const Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  auto excl = run_node("AveragePool", {x}, {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {1, 1, 0, 0})}, 11);
  ASSERT_TRUE(excl.is_ok()) << excl.status().to_string();
  expect_near(values<float>((*excl)[0]), {1, 1.5f, 2, 2.5f});
  auto incl = run_node("AveragePool", {x},
                       {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {1, 1, 0, 0}), attr_i("count_include_pad", 1)},
                       11);
  ASSERT_TRUE(incl.is_ok()) << incl.status().to_string();
  expect_near(values<float>((*incl)[0]), {0.25f, 0.75f, 1, 2.5f});
}

TEST(NnPool, GlobalAverageAndLp) {
  auto avg = run_node("GlobalAveragePool", {f32({1, 2, 3, 4, 3, 4}, {1, 2, 3})});
  ASSERT_TRUE(avg.is_ok()) << avg.status().to_string();
  EXPECT_EQ((*avg)[0].shape(), (Shape{1, 2, 1}));
  expect_near(values<float>((*avg)[0]), {2, 11.0f / 3});
  auto lp = run_node("GlobalLpPool", {f32({3, 4}, {1, 1, 2})});
  ASSERT_TRUE(lp.is_ok()) << lp.status().to_string();
  expect_near(values<float>((*lp)[0]), {5});
}

TEST(NnPool, RejectsRankMismatch) {
  auto y = run_node("MaxPool", {f32({1, 2, 3, 4}, {1, 1, 4})}, {attr_ints("kernel_shape", {2, 2})}, 12);
  EXPECT_FALSE(y.is_ok());
}

TEST(NnPool, MaxUnpoolRejectsOutOfRangeIndex) {
  auto ok = run_node("MaxUnpool", {f32({7}, {1, 1, 1, 1}), i64({3}, {1, 1, 1, 1})},
                     {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, 11);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  expect_near(values<float>((*ok)[0]), {0, 0, 0, 7});
  auto bad = run_node("MaxUnpool", {f32({7}, {1, 1, 1, 1}), i64({4}, {1, 1, 1, 1})},
                      {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, 11);
  EXPECT_FALSE(bad.is_ok());
}

}  // namespace
}  // namespace sdx
