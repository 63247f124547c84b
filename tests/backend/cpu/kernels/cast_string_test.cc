// Tests for src/backend/cpu/kernels/cast_string.cc (Cast to and from strings).
#include <cmath>
#include <limits>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

constexpr int kString = 8;

TEST(CastStringKernel, FloatFormatsLikeNumpy) {
  Tensor x = make<float>(DType::kFloat32,
                         {0.47892547f, 1e-7f, 1e6f, 150000.f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                          -INFINITY, 100.f, 1e-4f, 0.00015f},
                         {10});
  auto y = run_node("Cast", {x}, {attr_i("to", kString)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<std::string>((*y)[0]), (std::vector<std::string>{"0.47892547", "1e-07", "1e+06", "150000.0", "-0.0",
                                                                   "nan", "-inf", "100.0", "1e-04", "0.00015"}));
}

TEST(CastStringKernel, DoubleIntAndBoolFormatting) {
  auto d = run_node("Cast", {make<double>(DType::kFloat64, {1e6, 0.1, 1e16}, {3})}, {attr_i("to", kString)});
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(values<std::string>((*d)[0]), (std::vector<std::string>{"1000000.0", "0.1", "1e+16"}));
  auto i = run_node("Cast", {make<int32_t>(DType::kInt32, {-12, 0}, {2})}, {attr_i("to", kString)});
  ASSERT_TRUE(i.is_ok());
  EXPECT_EQ(values<std::string>((*i)[0]), (std::vector<std::string>{"-12", "0"}));
  auto b = run_node("Cast", {make<bool>(DType::kBool, {true, false}, {2})}, {attr_i("to", kString)});
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(values<std::string>((*b)[0]), (std::vector<std::string>{"True", "False"}));
}

TEST(CastStringKernel, ParsesNumbersAndSpecialValues) {
  Tensor x = make<std::string>(DType::kString, {"1e-5", "NaN", "INF", "-inf", " 2.5 ", "+INF"}, {6});
  auto y = run_node("Cast", {x}, {attr_i("to", 1)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto v = values<float>((*y)[0]);
  EXPECT_FLOAT_EQ(v[0], 1e-5f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], INFINITY);
  EXPECT_EQ(v[3], -INFINITY);
  EXPECT_EQ(v[4], 2.5f);
  EXPECT_EQ(v[5], INFINITY);
}

TEST(CastStringKernel, ParsesIntegersAndBools) {
  auto i = run_node("Cast", {make<std::string>(DType::kString, {"12", "-3"}, {2})}, {attr_i("to", 3)});
  ASSERT_TRUE(i.is_ok()) << i.status().to_string();
  EXPECT_EQ(values<int8_t>((*i)[0]), (std::vector<int8_t>{12, -3}));
  auto b = run_node("Cast", {make<std::string>(DType::kString, {"", "0", "False"}, {3})}, {attr_i("to", 9)});
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(values<uint8_t>((*b)[0]), (std::vector<uint8_t>{0, 1, 1}));  // numpy: any non-empty string is true
}

TEST(CastStringKernel, UnparsableStringIsAnError) {
  EXPECT_FALSE(run_node("Cast", {make<std::string>(DType::kString, {"abc"}, {1})}, {attr_i("to", 1)}).is_ok());
  EXPECT_FALSE(run_node("Cast", {make<std::string>(DType::kString, {"1.5"}, {1})}, {attr_i("to", 6)}).is_ok());
}

}  // namespace
}  // namespace sdx
