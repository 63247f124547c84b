#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorReshape, ZeroAndMinusOne) {
  Tensor x = f32(std::vector<float>(24, 1.f), {2, 3, 4});
  auto ys = run_node("Reshape", {x, i64({0, -1}, {2})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].shape(), (Shape{2, 12}));
}

TEST(TensorReshape, BadShapeFails) {
  Tensor x = f32(std::vector<float>(6, 1.f), {2, 3});
  EXPECT_FALSE(run_node("Reshape", {x, i64({4, -1}, {2})}).is_ok());
  EXPECT_FALSE(run_node("Reshape", {x, i64({-1, -1}, {2})}).is_ok());
}

TEST(TensorReshape, TransposeStrings) {
  auto ys = run_node("Transpose", {strs({"a", "b", "c", "d", "e", "f"}, {2, 3})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<std::string>((*ys)[0]), (std::vector<std::string>{"a", "d", "b", "e", "c", "f"}));
}

TEST(TensorReshape, TransposeBadPermFails) {
  Tensor x = f32(std::vector<float>(6, 1.f), {2, 3});
  EXPECT_FALSE(run_node("Transpose", {x}, {attr_ints("perm", {0, 0})}).is_ok());
}

TEST(TensorReshape, SqueezeNonUnitAxisFails) {
  Tensor x = f32(std::vector<float>(6, 1.f), {2, 3});
  EXPECT_FALSE(run_node("Squeeze", {x, i64({0}, {1})}).is_ok());
}

TEST(TensorReshape, UnsqueezeAxes) {
  Tensor x = f32(std::vector<float>(6, 1.f), {2, 3});
  auto ys = run_node("Unsqueeze", {x, i64({-1, 0}, {2})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].shape(), (Shape{1, 2, 3, 1}));
}

TEST(TensorReshape, DepthToSpaceDcr) {
  // [1, 4, 1, 1] -> [1, 1, 2, 2]: channels become the 2x2 block in order.
  auto ys = run_node("DepthToSpace", {f32({1, 2, 3, 4}, {1, 4, 1, 1})}, {attr_i("blocksize", 2)});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_FALSE(run_node("DepthToSpace", {f32({1, 2, 3}, {1, 3, 1, 1})}, {attr_i("blocksize", 2)}).is_ok());
}

TEST(TensorReshape, OldOpsetAxesAttributes) {
  Tensor x = f32(std::vector<float>(6, 1.f), {1, 2, 3});
  auto s = run_node("Squeeze", {x}, {attr_ints("axes", {0})}, 11);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)[0].shape(), (Shape{2, 3}));
  auto u = run_node("Unsqueeze", {x}, {attr_ints("axes", {3})}, 11);
  ASSERT_TRUE(u.is_ok()) << u.status().to_string();
  EXPECT_EQ((*u)[0].shape(), (Shape{1, 2, 3, 1}));
}

}  // namespace
}  // namespace sdx::test
