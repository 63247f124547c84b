// Tests for src/backend/cpu/kernels/quant_conv.cc (ConvInteger, QLinearConv).
#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(ConvIntegerKernel, SubtractsZeroPointBeforeSumming) {
  Tensor x = make<uint8_t>(DType::kUint8, {2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 1, 3, 3});
  Tensor w = make<uint8_t>(DType::kUint8, {1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor xz = make<uint8_t>(DType::kUint8, {1}, {});
  auto y = run_node("ConvInteger", {x, w, xz}, {}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{12, 16, 24, 28}));
}

TEST(ConvIntegerKernel, PaddingContributesZeroAfterZeroPoint) {
  Tensor x = make<uint8_t>(DType::kUint8, {5}, {1, 1, 1, 1});
  Tensor w = make<uint8_t>(DType::kUint8, {1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor xz = make<uint8_t>(DType::kUint8, {1}, {});
  auto y = run_node("ConvInteger", {x, w, xz}, {attr_ints("pads", {1, 1, 1, 1})}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{4, 4, 4, 4}));
}

TEST(ConvIntegerKernel, ChannelMismatchIsAnError) {
  Tensor x = make<uint8_t>(DType::kUint8, {}, {1, 2, 3, 3});
  Tensor w = make<uint8_t>(DType::kUint8, {}, {1, 3, 2, 2});
  EXPECT_FALSE(run_node("ConvInteger", {x, w}, {}, 10).is_ok());
}

TEST(QLinearConvKernel, RequantizesWithBias) {
  Tensor x = make<uint8_t>(DType::kUint8, {10, 20}, {1, 1, 1, 2});
  Tensor xs = make<float>(DType::kFloat32, {0.5f}, {});
  Tensor z0 = make<uint8_t>(DType::kUint8, {0}, {});
  Tensor w = make<uint8_t>(DType::kUint8, {2}, {1, 1, 1, 1});
  Tensor ys = make<float>(DType::kFloat32, {1.f}, {});
  Tensor yz = make<uint8_t>(DType::kUint8, {3}, {});
  Tensor bias = make<int32_t>(DType::kInt32, {4}, {1});
  auto y = run_node("QLinearConv", {x, xs, z0, w, xs, z0, ys, yz, bias}, {}, 10);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // (10*2 + 4) * 0.25 + 3 = 9; (20*2 + 4) * 0.25 + 3 = 14
  EXPECT_EQ(values<uint8_t>((*y)[0]), (std::vector<uint8_t>{9, 14}));
}

TEST(QLinearConvKernel, BadGroupIsAnError) {
  Tensor x = make<uint8_t>(DType::kUint8, {}, {1, 1, 2, 2});
  Tensor s = make<float>(DType::kFloat32, {1.f}, {});
  Tensor z = make<uint8_t>(DType::kUint8, {0}, {});
  Tensor w = make<uint8_t>(DType::kUint8, {}, {1, 1, 1, 1});
  EXPECT_FALSE(run_node("QLinearConv", {x, s, z, w, s, z, s, z}, {attr_i("group", 0)}, 10).is_ok());
}

}  // namespace
}  // namespace sdx
