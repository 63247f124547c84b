// Activation kernels through a session: hand-checked values, attributes and
// invalid attributes.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(ElementwiseActivation, LeakyReluAlpha) {
  auto y = run_single("LeakyRelu", {f32({-2, 0, 3}, {3})}, {attr_f("alpha", 0.5f)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{-1, 0, 3}));
}

TEST(ElementwiseActivation, SigmoidIsStableForLargeInputs) {
  auto y = run_single("Sigmoid", {f32({-1000, 0, 1000}, {3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{0, 0.5f, 1}));
}

TEST(ElementwiseActivation, GeluTanhApproximation) {
  auto y = run_single("Gelu", {f32({1.f}, {1})}, {attr_s("approximate", "tanh")});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const double x = 1.0;
  const double want = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  EXPECT_NEAR(values<float>(*y)[0], want, 1e-6);
}

TEST(ElementwiseActivation, ShrinkOnIntegers) {
  auto y = run_single("Shrink", {i32({-3, 0, 3}, {3})}, {attr_f("lambd", 1.f), attr_f("bias", 1.f)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int32_t>(*y), (std::vector<int32_t>{-2, 0, 2}));
}

TEST(ElementwiseActivation, BadGeluApproximationFailsAtLoad) {
  auto y = run_single("Gelu", {f32({1.f}, {1})}, {attr_s("approximate", "fast")});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("approximate"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx::test
