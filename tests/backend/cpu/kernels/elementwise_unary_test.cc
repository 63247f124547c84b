// Unary math kernels through a session: values, 16-bit floats, IsInf
// attributes and unsupported element types.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/float16.h"
#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(ElementwiseUnary, RoundHalfToEven) {
  auto y = run_single("Round", {f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f}, {6})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{0, 2, 2, -0.f, -2, 3}));
}

TEST(ElementwiseUnary, AbsAndNegOnIntegers) {
  auto a = run_single("Abs", {i32({-3, 4}, {2})});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(values<int32_t>(*a), (std::vector<int32_t>{3, 4}));
  auto n = run_single("Neg", {i64({-3, 4}, {2})});
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(values<int64_t>(*n), (std::vector<int64_t>{3, -4}));
}

TEST(ElementwiseUnary, SqrtOnFloat16) {
  Tensor x = Tensor::allocate(DType::kFloat16, Shape{2}).value();
  x.data<Float16>()[0] = Float16::from_float(4.f);
  x.data<Float16>()[1] = Float16::from_float(2.25f);
  auto y = run_single("Sqrt", {x});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->data<Float16>()[0].to_float(), 2.f);
  EXPECT_EQ(y->data<Float16>()[1].to_float(), 1.5f);
}

TEST(ElementwiseUnary, IsInfDetectsOnlyPositive) {
  const float inf = std::numeric_limits<float>::infinity();
  auto y = run_single("IsInf", {f32({inf, -inf, 1.f, NAN}, {4})}, {attr_i("detect_negative", 0)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<bool>(*y), (std::vector<bool>{true, false, false, false}));
}

TEST(ElementwiseUnary, EmptyTensor) {
  auto y = run_single("Exp", {f32({}, {0, 3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{0, 3}));
}

TEST(ElementwiseUnary, ExpRejectsIntegers) {
  auto y = run_single("Exp", {i32({1}, {1})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("int32"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx::test
