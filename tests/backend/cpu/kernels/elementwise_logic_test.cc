// Comparisons, boolean logic, bitwise ops and BitShift through a session.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(ElementwiseLogic, LessBroadcastsToBool) {
  auto y = run_single("Less", {f32({1, 5, 3}, {3}), f32({3}, {})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->dtype(), DType::kBool);
  EXPECT_EQ(values<bool>(*y), (std::vector<bool>{true, false, false}));
}

TEST(ElementwiseLogic, EqualOnStrings) {
  auto a = make<std::string>(DType::kString, {"a", "b"}, {2});
  auto b = make<std::string>(DType::kString, {"a"}, {1});
  auto y = run_single("Equal", {a, b});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<bool>(*y), (std::vector<bool>{true, false}));
}

TEST(ElementwiseLogic, XorAndNot) {
  auto x = run_single("Xor", {bools({true, true, false}, {3}), bools({true, false, false}, {3})});
  ASSERT_TRUE(x.is_ok()) << x.status().to_string();
  EXPECT_EQ(values<bool>(*x), (std::vector<bool>{false, true, false}));
  auto n = run_single("Not", {bools({true, false}, {2})});
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(values<bool>(*n), (std::vector<bool>{false, true}));
}

TEST(ElementwiseLogic, BitShiftOutOfRangeShifts) {
  auto l = run_single("BitShift", {i32({1, 1, 1}, {3}), i32({3, 32, -1}, {3})}, {attr_s("direction", "LEFT")});
  ASSERT_TRUE(l.is_ok()) << l.status().to_string();
  EXPECT_EQ(values<int32_t>(*l), (std::vector<int32_t>{8, 0, 0}));
  auto r = run_single("BitShift", {i32({-16, -16}, {2}), i32({2, 40}, {2})}, {attr_s("direction", "RIGHT")});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values<int32_t>(*r), (std::vector<int32_t>{-4, -1}));
}

TEST(ElementwiseLogic, BitwiseNot) {
  auto y = run_single("BitwiseNot", {i32({0, 5}, {2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int32_t>(*y), (std::vector<int32_t>{-1, -6}));
}

TEST(ElementwiseLogic, BadDirectionFailsAtLoad) {
  auto y = run_single("BitShift", {i32({1}, {1}), i32({1}, {1})}, {attr_s("direction", "UP")});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("direction"), std::string::npos) << y.status().message();
}

TEST(ElementwiseLogic, AndRejectsFloats) {
  auto y = run_single("And", {f32({1}, {1}), f32({1}, {1})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("element type"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx::test
