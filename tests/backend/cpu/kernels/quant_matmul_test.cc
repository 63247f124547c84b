// Tests for src/backend/cpu/kernels/quant_matmul.cc (MatMulInteger, QLinearMatMul).
#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(MatMulIntegerKernel, SubtractsZeroPoints) {
  Tensor a = make<uint8_t>(DType::kUint8, {11, 7, 3, 10, 6, 1}, {2, 3});
  Tensor b = make<uint8_t>(DType::kUint8, {1, 4, 2, 5, 3, 6}, {3, 2});
  Tensor az = make<uint8_t>(DType::kUint8, {1}, {});
  Tensor bz = make<uint8_t>(DType::kUint8, {0, 1}, {2});  // per column
  auto y = run_node("MatMulInteger", {a, b, az, bz}, {}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // A - 1 = [[10,6,2],[9,5,0]]; B - [0,1] = [[1,3],[2,4],[3,5]]
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{28, 64, 19, 47}));
}

TEST(MatMulIntegerKernel, BroadcastsBatches) {
  Tensor a = make<int8_t>(DType::kInt8, {1, 2, -1, 3}, {2, 1, 2});
  Tensor b = make<int8_t>(DType::kInt8, {1, 1}, {2, 1});
  auto y = run_node("MatMulInteger", {a, b}, {}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{3, 2}));
}

TEST(MatMulIntegerKernel, InnerDimensionMismatchIsAnError) {
  Tensor a = make<uint8_t>(DType::kUint8, {}, {2, 3});
  Tensor b = make<uint8_t>(DType::kUint8, {}, {2, 2});
  EXPECT_FALSE(run_node("MatMulInteger", {a, b}, {}, 10).is_ok());
}

TEST(QLinearMatMulKernel, Requantizes) {
  Tensor a = make<uint8_t>(DType::kUint8, {10, 20}, {1, 2});
  Tensor b = make<uint8_t>(DType::kUint8, {3, 4}, {2, 1});
  Tensor s1 = make<float>(DType::kFloat32, {0.5f}, {});
  Tensor z0 = make<uint8_t>(DType::kUint8, {0}, {});
  Tensor ys = make<float>(DType::kFloat32, {2.f}, {});
  Tensor yz = make<uint8_t>(DType::kUint8, {5}, {});
  auto y = run_node("QLinearMatMul", {a, s1, z0, b, s1, z0, ys, yz}, {}, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // (10*3 + 20*4) * 0.25 / 2 + 5 = 18.75 -> 19
  EXPECT_EQ(values<uint8_t>((*y)[0]), (std::vector<uint8_t>{19}));
}

TEST(QLinearMatMulKernel, NonIntegerInputIsAnError) {
  Tensor a = make<float>(DType::kFloat32, {1.f}, {1, 1});
  Tensor s = make<float>(DType::kFloat32, {1.f}, {});
  Tensor z = make<uint8_t>(DType::kUint8, {0}, {});
  EXPECT_FALSE(run_node("QLinearMatMul", {a, s, z, a, s, z, s, z}, {}, 21).is_ok());
}

// Found by the onnx_model fuzzer: a zero y_scale divided by zero and converted NaN to an integer (UB).
TEST(QLinearMatMulKernel, ZeroOutputScaleIsAnError) {
  Tensor a = make<uint8_t>(DType::kUint8, {1}, {1, 1});
  Tensor s = make<float>(DType::kFloat32, {1.f}, {});
  Tensor zero = make<float>(DType::kFloat32, {0.f}, {});
  Tensor z = make<uint8_t>(DType::kUint8, {0}, {});
  auto y = run_node("QLinearMatMul", {a, s, z, a, s, z, zero, z}, {}, 21);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("y_scale must be finite and non-zero"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx
