// Add/Sub/Mul/Div/Mod/Pow/PRelu through a session: broadcasting, integer
// semantics (C-style division, Python-style mod) and bad inputs.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(ElementwiseBinary, AddBroadcastsRow) {
  auto y = run_single("Add", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({10, 20, 30}, {3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseBinary, IntegerDivTruncatesAndModFollowsDivisorSign) {
  auto d = run_single("Div", {i32({7, -7, 7, -7}, {4}), i32({2, 2, -2, -2}, {4})});
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(values<int32_t>(*d), (std::vector<int32_t>{3, -3, -3, 3}));
  auto m = run_single("Mod", {i32({7, -7, 7, -7}, {4}), i32({3, 3, -3, -3}, {4})});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(values<int32_t>(*m), (std::vector<int32_t>{1, 2, -2, -1}));
  auto f = run_single("Mod", {i32({7, -7}, {2}), i32({3, 3}, {2})}, {attr_i("fmod", 1)});
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(values<int32_t>(*f), (std::vector<int32_t>{1, -1}));
}

TEST(ElementwiseBinary, IntegerDivisionByZeroDoesNotTrap) {
  auto d = run_single("Div", {i32({5}, {1}), i32({0}, {1})});
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(values<int32_t>(*d)[0], 0);
}

TEST(ElementwiseBinary, PowMixedTypes) {
  auto y = run_single("Pow", {f32({2, 3}, {2}), i64({3, 2}, {2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{8, 9}));
  auto z = run_single("Pow", {i64({2, -3}, {2}), i64({10, 3}, {2})});
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  EXPECT_EQ(values<int64_t>(*z), (std::vector<int64_t>{1024, -27}));
}

TEST(ElementwiseBinary, PReluSlopePerChannel) {
  auto y = run_single("PRelu", {f32({-2, 3, -4, 5}, {2, 2}), f32({0.5f, 0.25f}, {2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{-1, 3, -2, 5}));
}

TEST(ElementwiseBinary, LegacyBroadcastAlongAxis) {
  // Opset 6: B [2] aligned with A [2, 3] at axis 0 (numpy would fail).
  auto y = run_single("Add", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({10, 20}, {2})},
                      {attr_i("broadcast", 1), attr_i("axis", 0)}, 6);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{11, 12, 13, 24, 25, 26}));
}

TEST(ElementwiseBinary, IncompatibleShapesAreAnError) {
  auto y = run_single("Mul", {f32({1, 2, 3}, {3}), f32({1, 2}, {2})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("cannot be broadcast"), std::string::npos) << y.status().message();
}

TEST(ElementwiseBinary, MixedElementTypesAreAnError) {
  auto y = run_single("Sub", {f32({1}, {1}), i32({1}, {1})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("element type"), std::string::npos) << y.status().message();
}

TEST(ElementwiseBinary, BadModAttributeFailsAtLoad) {
  auto y = run_single("Mod", {i32({1}, {1}), i32({1}, {1})}, {attr_i("fmod", 2)});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("fmod"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx::test
