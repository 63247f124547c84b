#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorConstant, ConstantValueInts) {
  auto ys = run_node("Constant", {}, {attr_ints("value_ints", {4, 5, 6})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].dtype(), DType::kInt64);
  EXPECT_EQ(values<int64_t>((*ys)[0]), (std::vector<int64_t>{4, 5, 6}));
}

TEST(TensorConstant, ConstantWithoutValueFails) {
  auto ys = run_node("Constant", {}, {});
  EXPECT_FALSE(ys.is_ok());
}

TEST(TensorConstant, ShapeStartEnd) {
  Tensor x = f32(std::vector<float>(24, 0.f), {2, 3, 4});
  auto ys = run_node("Shape", {x}, {attr_i("start", -2)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<int64_t>((*ys)[0]), (std::vector<int64_t>{3, 4}));
}

TEST(TensorConstant, ConstantOfShapeRejectsNegativeDim) {
  auto ys = run_node("ConstantOfShape", {i64({2, -1}, {2})});
  EXPECT_FALSE(ys.is_ok());
}

TEST(TensorConstant, RangeIntNegativeDelta) {
  auto ys = run_node("Range", {i64({10}, {}), i64({4}, {}), i64({-3}, {})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<int64_t>((*ys)[0]), (std::vector<int64_t>{10, 7}));
}

TEST(TensorConstant, RangeZeroDeltaFails) {
  auto ys = run_node("Range", {i64({0}, {}), i64({4}, {}), i64({0}, {})});
  EXPECT_FALSE(ys.is_ok());
}

TEST(TensorConstant, EyeLikeOffDiagonal) {
  auto ys = run_node("EyeLike", {f32(std::vector<float>(6, 5.f), {2, 3})}, {attr_i("k", 1)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{0, 1, 0, 0, 0, 1}));
}

TEST(TensorConstant, DropoutInferenceMask) {
  auto ys = run_node("Dropout", {f32({1, 2, 3}, {3})}, {}, 21, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ((*ys)[1].dtype(), DType::kBool);
  EXPECT_TRUE((*ys)[1].data<bool>()[0] && (*ys)[1].data<bool>()[2]);
}

}  // namespace
}  // namespace sdx::test
