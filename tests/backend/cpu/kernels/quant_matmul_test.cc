// Tests for src/backend/cpu/kernels/quant_matmul.cc (MatMulInteger, QLinearMatMul).
#include <random>
#include <string>
#include <vector>

#include "bound_test_util.h"
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

// The integer-GEMM path (one B for all batches) against int64 sums: uint8/int8 on both sides, per-row A
// and per-column B zero points, a batch of 3 and K and N not multiples of 4 or 64; a batched B (the
// portable loop) gives the same sums.
TEST(MatMulIntegerKernel, GemmPathMatchesExactSums) {
  std::mt19937 gen(17);
  for (DType at : {DType::kUint8, DType::kInt8})
    for (DType bt : {DType::kUint8, DType::kInt8}) {
      SCOPED_TRACE(std::string(dtype_name(at)) + " x " + dtype_name(bt));
      const int64_t B = 3, M = 5, K = 37, N = 70;
      auto draw = [&](DType t, int64_t n) { return random_8bit(t, n, gen); };
      const std::vector<int> a = draw(at, B * M * K), b = draw(bt, K * N), az = draw(at, M), bz = draw(bt, N);
      std::vector<int32_t> want(static_cast<size_t>(B * M * N));
      for (int64_t i = 0; i < B; ++i)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            int64_t s = 0;
            for (int64_t k = 0; k < K; ++k)
              s += int64_t{a[static_cast<size_t>((i * M + m) * K + k)] - az[static_cast<size_t>(m)]} *
                   (b[static_cast<size_t>(k * N + n)] - bz[static_cast<size_t>(n)]);
            want[static_cast<size_t>((i * M + m) * N + n)] = static_cast<int32_t>(s);
          }
      auto y = run_node("MatMulInteger", {tensor_8bit(at, a, {B, M, K}), tensor_8bit(bt, b, {K, N}), tensor_8bit(at, az, {M}), tensor_8bit(bt, bz, {N})}, {}, 10);
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      EXPECT_EQ(values<int32_t>((*y)[0]), want);
      std::vector<int> b3;
      for (int64_t i = 0; i < B; ++i) b3.insert(b3.end(), b.begin(), b.end());
      auto y3 = run_node("MatMulInteger", {tensor_8bit(at, a, {B, M, K}), tensor_8bit(bt, b3, {B, K, N}), tensor_8bit(at, az, {M}), tensor_8bit(bt, bz, {N})}, {}, 10);
      ASSERT_TRUE(y3.is_ok()) << y3.status().to_string();
      EXPECT_EQ(values<int32_t>((*y3)[0]), want);
    }
}

// The bound form (B packed once) gives run()'s sums without allocating, with A and a per-row a_zero_point
// changed between calls; a B that changes has no bound form.
TEST(MatMulIntegerKernel, BoundFormMatchesRun) {
  std::vector<uint8_t> av(2 * 4 * 33), bv(33 * 90);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<uint8_t>((i * 29) % 256);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<uint8_t>((i * 53) % 256);
  const Tensor a = make(DType::kUint8, av, {2, 4, 33}), b = make(DType::kUint8, bv, {33, 90});
  const Tensor az = make(DType::kUint8, std::vector<uint8_t>{3, 250, 128, 0}, {4});
  const Tensor bz = make(DType::kUint8, std::vector<uint8_t>{77}, {});
  expect_bound_matches({.op = "MatMulInteger", .opset = 10, .inputs = {a, b, az, bz}}, {1, 3});
  expect_no_bound_form({.op = "MatMulInteger", .opset = 10, .inputs = {a, b, az, bz}}, {3});
}

}  // namespace
}  // namespace sdx
