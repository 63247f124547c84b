// Max/Min/Sum/Mean, Where and Clip through a session.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(ElementwiseVariadic, MeanOfThreeBroadcastInputs) {
  auto y = run_single("Mean", {f32({1, 2}, {2}), f32({3}, {1}), f32({5, 7, 2, 4}, {2, 2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{3, 4, 2, 3}));
}

TEST(ElementwiseVariadic, MaxPropagatesNaN) {
  auto y = run_single("Max", {f32({1, NAN}, {2}), f32({2, 0}, {2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y)[0], 2.f);
  EXPECT_TRUE(std::isnan(values<float>(*y)[1]));
}

TEST(ElementwiseVariadic, WhereBroadcastsCondition) {
  auto y = run_single("Where", {bools({true, false}, {2}), i64({1, 2, 3, 4}, {2, 2}), i64({0}, {})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>(*y), (std::vector<int64_t>{1, 0, 3, 0}));
}

TEST(ElementwiseVariadic, ClipInputsAndLegacyAttributes) {
  auto y = run_single("Clip", {f32({-5, 0, 5}, {3}), Tensor(), f32({1}, {})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{-5, 0, 1}));
  auto z = run_single("Clip", {f32({-5, 0, 5}, {3})}, {attr_f("min", -1), attr_f("max", 2)}, 6);
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  EXPECT_EQ(values<float>(*z), (std::vector<float>{-1, 0, 2}));
}

TEST(ElementwiseVariadic, ClipRejectsNonScalarBound) {
  auto y = run_single("Clip", {f32({1, 2}, {2}), f32({0, 0}, {2})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("scalar"), std::string::npos) << y.status().message();
}

TEST(ElementwiseVariadic, WhereRejectsNonBoolCondition) {
  auto y = run_single("Where", {f32({1}, {1}), f32({1}, {1}), f32({2}, {1})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("bool"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx::test
