#include <cmath>

#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(LossNll, ReductionsWeightsAndIgnoreIndex) {
  Tensor x = f32({-1, -2, -3, -4, -5, -6}, {2, 3});
  Tensor t = i64({2, 1}, {2});
  auto none = run_node("NegativeLogLikelihoodLoss", {x, t}, {attr_s("reduction", "none")}, 13);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  expect_near(values<float>((*none)[0]), {3, 5});
  auto mean = run_node("NegativeLogLikelihoodLoss", {x, t, f32({1, 1, 3}, {3})}, {}, 13);
  ASSERT_TRUE(mean.is_ok());
  expect_near(values<float>((*mean)[0]), {(9.f + 5.f) / 4.f});
  auto ii = run_node("NegativeLogLikelihoodLoss", {x, t}, {attr_s("reduction", "sum"), attr_i("ignore_index", 2)}, 13);
  ASSERT_TRUE(ii.is_ok());
  expect_near(values<float>((*ii)[0]), {5});
}

TEST(LossNll, SoftmaxCrossEntropyWithLogProb) {
  auto y = run_node("SoftmaxCrossEntropyLoss", {f32({0, 0, 0, 0}, {2, 2}), i64({0, 1}, {2})}, {}, 13, 2);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {std::log(2.f)});
  expect_near(values<float>((*y)[1]), {-std::log(2.f), -std::log(2.f), -std::log(2.f), -std::log(2.f)});
}

TEST(LossNll, BadTargetsAreErrors) {
  Tensor x = f32({-1, -2, -3, -4}, {2, 2});
  auto oob = run_node("NegativeLogLikelihoodLoss", {x, i64({0, 5}, {2})}, {}, 13);
  ASSERT_FALSE(oob.is_ok());
  EXPECT_NE(oob.status().message().find("target value 5"), std::string::npos) << oob.status().to_string();
  EXPECT_FALSE(run_node("NegativeLogLikelihoodLoss", {x, i64({0, 1, 1}, {3})}, {}, 13).is_ok());
  EXPECT_FALSE(run_node("SoftmaxCrossEntropyLoss", {x, i64({0, 1}, {2})}, {attr_s("reduction", "avg")}, 13).is_ok());
}

}  // namespace
}  // namespace sdx
