#include <cmath>

#include "reduce_test_util.h"

namespace sdx {
namespace {
using namespace reduce_test;

TEST(LossNll, ReductionsWeightsAndIgnoreIndex) {
  Tensor x = f32({-1, -2, -3, -4, -5, -6}, {2, 3});
  Tensor t = i64({2, 1}, {2});
  auto none = run("NegativeLogLikelihoodLoss", {x, t}, {attr_str("reduction", "none")}, 13);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  expect_near(vals<float>((*none)[0]), {3, 5});
  auto mean = run("NegativeLogLikelihoodLoss", {x, t, f32({1, 1, 3}, {3})}, {}, 13);
  ASSERT_TRUE(mean.is_ok());
  expect_near(vals<float>((*mean)[0]), {(9.f + 5.f) / 4.f});
  auto ii = run("NegativeLogLikelihoodLoss", {x, t}, {attr_str("reduction", "sum"), attr_int("ignore_index", 2)}, 13);
  ASSERT_TRUE(ii.is_ok());
  expect_near(vals<float>((*ii)[0]), {5});
}

TEST(LossNll, SoftmaxCrossEntropyWithLogProb) {
  auto y = run("SoftmaxCrossEntropyLoss", {f32({0, 0, 0, 0}, {2, 2}), i64({0, 1}, {2})}, {}, 13, 2);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(vals<float>((*y)[0]), {std::log(2.f)});
  expect_near(vals<float>((*y)[1]), {-std::log(2.f), -std::log(2.f), -std::log(2.f), -std::log(2.f)});
}

TEST(LossNll, BadTargetsAreErrors) {
  Tensor x = f32({-1, -2, -3, -4}, {2, 2});
  auto oob = run("NegativeLogLikelihoodLoss", {x, i64({0, 5}, {2})}, {}, 13);
  ASSERT_FALSE(oob.is_ok());
  EXPECT_NE(oob.status().message().find("target value 5"), std::string::npos) << oob.status().to_string();
  EXPECT_FALSE(run("NegativeLogLikelihoodLoss", {x, i64({0, 1, 1}, {3})}, {}, 13).is_ok());
  EXPECT_FALSE(run("SoftmaxCrossEntropyLoss", {x, i64({0, 1}, {2})}, {attr_str("reduction", "avg")}, 13).is_ok());
}

}  // namespace
}  // namespace sdx
