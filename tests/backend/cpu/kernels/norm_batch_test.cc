#include <cmath>

#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(NormBatch, Inference) {
  // C=2: channel 0 mean 1 var 4 scale 2 bias 0; channel 1 identity.
  auto y = run_node("BatchNormalization",
                    {f32({3, 5, 1, 7}, {1, 2, 2}), f32({2, 1}, {2}), f32({0, 0}, {2}), f32({1, 0}, {2}), f32({4, 1}, {2})},
                    {attr_f("epsilon", 0.f)}, 15);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {2, 4, 1, 7});
}

TEST(NormBatch, TrainingModeRunningStats) {
  auto y = run_node("BatchNormalization", {f32({1, 3}, {2, 1}), f32({1}, {1}), f32({0}, {1}), f32({0}, {1}), f32({1}, {1})},
                    {attr_f("epsilon", 0.f), attr_f("momentum", 0.5f), attr_i("training_mode", 1)}, 15, 3);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {-1, 1});
  expect_near(values<float>((*y)[1]), {1});  // 0 * 0.5 + 2 * 0.5
  expect_near(values<float>((*y)[2]), {1});  // 1 * 0.5 + 1 * 0.5
}

TEST(NormBatch, Lrn) {
  // size 1: y = x / (1 + 1 * x^2)^1
  auto y = run_node("LRN", {f32({1, 2}, {1, 2, 1, 1})}, {attr_i("size", 1), attr_f("alpha", 1.f), attr_f("beta", 1.f)}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {0.5f, 0.4f});
}

TEST(NormBatch, BadInputsAreErrors) {
  EXPECT_FALSE(run_node("BatchNormalization", {f32({1, 2}, {1, 2}), f32({1}, {1}), f32({0}, {1}), f32({0}, {1}), f32({1}, {1})}, {}, 15).is_ok());
  EXPECT_FALSE(run_node("LRN", {f32({1, 2}, {1, 2, 1, 1})}, {}, 13).is_ok());  // size missing
}

}  // namespace
}  // namespace sdx
