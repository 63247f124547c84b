// Tests for src/backend/cpu/kernels/cast.cc (Cast, CastLike, BitCast).
#include <cmath>
#include <cstring>
#include <limits>

#include "core/float16.h"
#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(CastKernel, FloatToFloat8E4M3FNSaturates) {
  Tensor x = make<float>(DType::kFloat32, {0.5f, 1000.f, -1000.f, kNaN, 0.3f}, {5});
  auto y = run_node("Cast", {x}, {attr_i("to", 17)}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // 0.5 = 2^-1: exponent field 6; 0.3 rounds to 0.3125 = 1.25 * 2^-2 (0x2A); 448 = 0x7E; NaN = 0x7F.
  EXPECT_EQ(bytes((*y)[0]), (std::vector<uint8_t>{0x30, 0x7E, 0xFE, 0x7F, 0x2A}));
}

TEST(CastKernel, FloatToFloat8E4M3FNWithoutSaturationGivesNaN) {
  Tensor x = make<float>(DType::kFloat32, {1000.f, -1000.f, INFINITY}, {3});
  auto y = run_node("Cast", {x}, {attr_i("to", 17), attr_i("saturate", 0)}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(bytes((*y)[0]), (std::vector<uint8_t>{0x7F, 0xFF, 0x7F}));
}

TEST(CastKernel, FloatToE5M2OverflowIsInfinity) {
  Tensor x = make<float>(DType::kFloat32, {1e6f, -1e6f}, {2});
  auto y = run_node("Cast", {x}, {attr_i("to", 19), attr_i("saturate", 0)}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(bytes((*y)[0]), (std::vector<uint8_t>{0x7C, 0xFC}));
}

TEST(CastKernel, FloatToInt4WrapsAndPacksLowNibbleFirst) {
  Tensor x = make<float>(DType::kFloat32, {-9.f, 7.f, 1.5f}, {3});
  auto y = run_node("Cast", {x}, {attr_i("to", 22)}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(bytes((*y)[0]), (std::vector<uint8_t>{0x77, 0x01}));  // -9 wraps to 7; 1.5 truncates to 1
}

TEST(CastKernel, Uint2ToFloatUnpacks) {
  Tensor x = make<uint8_t>(DType::kUint2, {0xE4}, {4});  // elements 0, 1, 2, 3
  auto y = run_node("Cast", {x}, {attr_i("to", 1)}, 25);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{0, 1, 2, 3}));
}

TEST(CastKernel, Float8E8M0RoundModes) {
  Tensor x = make<float>(DType::kFloat32, {3.f, 0.5f}, {2});
  for (auto [mode, want] : {std::pair<const char*, uint8_t>{"up", 129}, {"down", 128}, {"nearest", 129}}) {
    auto y = run_node("Cast", {x}, {attr_i("to", 24), attr_s("round_mode", mode)}, 25);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_EQ(bytes((*y)[0]), (std::vector<uint8_t>{want, 126})) << mode;
  }
}

TEST(CastKernel, FloatToFloat16RoundsToNearestEven) {
  Tensor x = make<double>(DType::kFloat64, {1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 65520.0}, {3});
  auto y = run_node("Cast", {x}, {attr_i("to", 10)}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto v = values<Float16>((*y)[0]);
  EXPECT_EQ(v[0].bits, 0x3C00);  // tie rounds down to even
  EXPECT_EQ(v[1].bits, 0x3C02);  // tie rounds up to even
  EXPECT_EQ(v[2].bits, 0x7C00);  // overflow to infinity
}

TEST(CastKernel, CastLikeTakesTheSecondInputsType) {
  Tensor x = make<float>(DType::kFloat32, {1.9f, -2.7f}, {2});
  Tensor like = make<int64_t>(DType::kInt64, {}, {0});
  auto y = run_node("CastLike", {x, like}, {}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>((*y)[0]), (std::vector<int64_t>{1, -2}));
}

TEST(CastKernel, EmptyTensor) {
  Tensor x = make<float>(DType::kFloat32, {}, {0, 3});
  auto y = run_node("Cast", {x}, {attr_i("to", 22)}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{0, 3}));
}

TEST(CastKernel, BadTargetTypeFailsAtLoad) {
  Tensor x = make<float>(DType::kFloat32, {1.f}, {1});
  EXPECT_FALSE(run_node("Cast", {x}, {attr_i("to", 99)}, 21).is_ok());
  EXPECT_FALSE(run_node("Cast", {x}, {attr_i("to", 1), attr_s("round_mode", "sideways")}, 25).is_ok());
}

TEST(BitCastKernel, ReinterpretsBits) {
  Tensor x = make<float>(DType::kFloat32, {1.0f, -2.0f}, {2});
  auto y = run_node("BitCast", {x}, {attr_i("to", 6)}, 26);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{0x3f800000, static_cast<int32_t>(0xc0000000u)}));
}

TEST(BitCastKernel, DifferentWidthIsAnError) {
  Tensor x = make<int32_t>(DType::kInt32, {1}, {1});
  auto y = run_node("BitCast", {x}, {attr_i("to", 5)}, 26);
  EXPECT_FALSE(y.is_ok());
}

}  // namespace
}  // namespace sdx
