// Tests for src/backend/cpu/kernels/quant_linear.cc (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear).
#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(QuantizeLinearKernel, PerTensorUint8RoundsHalfToEvenAndSaturates) {
  Tensor x = make<float>(DType::kFloat32, {0.f, 2.f, 3.f, 1000.f, -254.f, -1000.f}, {6});
  Tensor s = make<float>(DType::kFloat32, {2.f}, {});
  Tensor z = make<uint8_t>(DType::kUint8, {128}, {});
  auto y = run_node("QuantizeLinear", {x, s, z});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // 3/2 = 1.5 rounds to 2; 1000/2 + 128 saturates; -254/2 + 128 = 1.
  EXPECT_EQ(values<uint8_t>((*y)[0]), (std::vector<uint8_t>{128, 129, 130, 255, 1, 0}));
}

TEST(QuantizeLinearKernel, PerAxisInt8) {
  Tensor x = make<float>(DType::kFloat32, {1.f, 2.f, 3.f, 4.f}, {2, 2});
  Tensor s = make<float>(DType::kFloat32, {1.f, 0.5f}, {2});
  Tensor z = make<int8_t>(DType::kInt8, {0, -1}, {2});
  auto y = run_node("QuantizeLinear", {x, s, z}, {attr_i("axis", 0)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int8_t>((*y)[0]), (std::vector<int8_t>{1, 2, 5, 7}));
}

TEST(QuantizeLinearKernel, BlockedToInt4WithOutputDtype) {
  Tensor x = make<float>(DType::kFloat32, {1.f, 2.f, 30.f, -40.f}, {1, 4});
  Tensor s = make<float>(DType::kFloat32, {1.f, 10.f}, {1, 2});
  auto y = run_node("QuantizeLinear", {x, s}, {attr_i("axis", 1), attr_i("block_size", 2), attr_i("output_dtype", 22)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // 1, 2, 3, -4 packed two per byte, low nibble first.
  EXPECT_EQ(bytes((*y)[0]), (std::vector<uint8_t>{0x21, 0xC3}));
}

TEST(QuantizeLinearKernel, MismatchedScaleIsAnError) {
  Tensor x = make<float>(DType::kFloat32, {1.f, 2.f, 3.f}, {3});
  Tensor s = make<float>(DType::kFloat32, {1.f, 2.f}, {2});
  EXPECT_FALSE(run_node("QuantizeLinear", {x, s}, {attr_i("axis", 0)}).is_ok());
}

TEST(DequantizeLinearKernel, PerAxisWithZeroPoint) {
  Tensor x = make<uint8_t>(DType::kUint8, {0, 3, 128, 255}, {2, 2});
  Tensor s = make<float>(DType::kFloat32, {2.f, 0.5f}, {2});
  Tensor z = make<uint8_t>(DType::kUint8, {1, 128}, {2});
  auto y = run_node("DequantizeLinear", {x, s, z}, {attr_i("axis", 0)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{-2.f, 4.f, 0.f, 63.5f}));
}

TEST(DequantizeLinearKernel, Float8Input) {
  Tensor x = make<uint8_t>(DType::kFloat8E4M3FN, {0x30, 0x7E}, {2});  // 0.5, 448
  Tensor s = make<float>(DType::kFloat32, {2.f}, {});
  auto y = run_node("DequantizeLinear", {x, s});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{1.f, 896.f}));
}

TEST(DequantizeLinearKernel, ZeroPointTypeMismatchIsAnError) {
  Tensor x = make<uint8_t>(DType::kUint8, {1}, {1});
  Tensor s = make<float>(DType::kFloat32, {1.f}, {});
  Tensor z = make<int8_t>(DType::kInt8, {0}, {});
  EXPECT_FALSE(run_node("DequantizeLinear", {x, s, z}).is_ok());
}

TEST(DynamicQuantizeLinearKernel, OnnxExample) {
  Tensor x = make<float>(DType::kFloat32, {0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f}, {6});
  auto y = run_node("DynamicQuantizeLinear", {x}, {}, 11, 3);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<uint8_t>((*y)[0]), (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ(values<float>((*y)[1])[0], 5.f / 255.f);
  EXPECT_EQ(values<uint8_t>((*y)[2])[0], 153);
}

TEST(DynamicQuantizeLinearKernel, NonFloatInputIsAnError) {
  Tensor x = make<int32_t>(DType::kInt32, {1}, {1});
  EXPECT_FALSE(run_node("DynamicQuantizeLinear", {x}, {}, 11, 3).is_ok());
}

}  // namespace
}  // namespace sdx
