#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnMatMul, BatchedBroadcastWithVector) {
  // A: [2, 2, 3], B: [3] -> [2, 2]
  auto y = run_node("MatMul", {f32({1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}, {2, 2, 3}), f32({1, 10, 100}, {3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{2, 2}));
  expect_near(values<float>((*y)[0]), {321, 654, 1, 10});
}

TEST(NnMatMul, BroadcastsBatchDims) {
  // A: [2, 1, 2], B: [1, 2, 1] -> [2, 1, 1]
  auto y = run_node("MatMul", {f32({1, 2, 3, 4}, {2, 1, 2}), f32({1, 1}, {1, 2, 1})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{2, 1, 1}));
  expect_near(values<float>((*y)[0]), {3, 7});
}

TEST(NnMatMul, RejectsMismatchedInnerDims) {
  auto y = run_node("MatMul", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({1, 2, 3, 4}, {2, 2})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("inner dimensions"), std::string::npos) << y.status().to_string();
}

TEST(NnGemm, TransposesScalesAndBroadcastsC) {
  // A^T with A = [[1, 3], [2, 4]] stored K x M; B = I; C = [10, 20] broadcast over rows.
  auto y = run_node("Gemm", {f32({1, 3, 2, 4}, {2, 2}), f32({1, 0, 0, 1}, {2, 2}), f32({10, 20}, {2})},
                    {attr_i("transA", 1), attr_f("alpha", 2.0f), attr_f("beta", 0.5f)}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {2 + 5, 4 + 10, 6 + 5, 8 + 10});
}

TEST(NnGemm, RejectsNonBroadcastableC) {
  auto y = run_node("Gemm", {f32({1, 2, 3, 4}, {2, 2}), f32({1, 0, 0, 1}, {2, 2}), f32({1, 2, 3}, {3})}, {}, 13);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx

namespace sdx {
namespace {

using namespace test;

TEST(NnMatMul, EmptyInnerDimGivesZeros) {
  auto y = run_node("MatMul", {f32({}, {2, 0}), f32({}, {0, 3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{2, 3}));
  expect_near(values<float>((*y)[0]), {0, 0, 0, 0, 0, 0});
}

}  // namespace
}  // namespace sdx
