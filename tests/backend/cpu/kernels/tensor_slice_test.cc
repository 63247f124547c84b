#include <climits>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorSlice, NegativeStepClamped) {
  Tensor x = f32({0, 1, 2, 3, 4}, {5});
  auto ys = run_node("Slice", {x, i64({100}, {1}), i64({-100}, {1}), i64({0}, {1}), i64({-2}, {1})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{4, 2, 0}));
}

TEST(TensorSlice, ZeroStepFails) {
  Tensor x = f32({0, 1, 2}, {3});
  EXPECT_FALSE(run_node("Slice", {x, i64({0}, {1}), i64({3}, {1}), i64({0}, {1}), i64({0}, {1})}).is_ok());
}

TEST(TensorSlice, BadAxisFails) {
  Tensor x = f32({0, 1, 2}, {3});
  EXPECT_FALSE(run_node("Slice", {x, i64({0}, {1}), i64({3}, {1}), i64({1}, {1})}).is_ok());
}

TEST(TensorSlice, PadReflectAndEdge) {
  Tensor x = f32({1, 2, 3}, {3});
  auto r = run_node("Pad", {x, i64({2, 2}, {2})}, {attr_s("mode", "reflect")});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values<float>((*r)[0]), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  auto e = run_node("Pad", {x, i64({1, -1}, {2})}, {attr_s("mode", "edge")});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(values<float>((*e)[0]), (std::vector<float>{1, 1, 2}));
}

TEST(TensorSlice, PadConstantValueAndBadPads) {
  Tensor x = f32({1, 2}, {2});
  auto c = run_node("Pad", {x, i64({1, 0}, {2}), f32({9}, {})});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(values<float>((*c)[0]), (std::vector<float>{9, 1, 2}));
  EXPECT_FALSE(run_node("Pad", {x, i64({1, 0, 0}, {3})}).is_ok());
  EXPECT_FALSE(run_node("Pad", {x, i64({-3, 0}, {2})}).is_ok());
}

TEST(TensorSlice, CenterCropPad) {
  Tensor x = f32({1, 2, 3, 4, 5}, {5});
  auto c = run_node("CenterCropPad", {x, i64({3}, {1})});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(values<float>((*c)[0]), (std::vector<float>{2, 3, 4}));
  auto p = run_node("CenterCropPad", {x, i64({7}, {1})});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(values<float>((*p)[0]), (std::vector<float>{0, 1, 2, 3, 4, 5, 0}));
}

TEST(TensorSlice, ExtremeStepsAndPads) {
  Tensor x = f32({0, 1, 2, 3, 4}, {5});
  const int64_t kMin = INT64_MIN, kMax = INT64_MAX;
  auto a = run_node("Slice", {x, i64({kMax}, {1}), i64({kMin}, {1}), i64({0}, {1}), i64({kMin}, {1})});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(values<float>((*a)[0]), (std::vector<float>{4}));
  auto b = run_node("Slice", {x, i64({kMin}, {1}), i64({kMax}, {1}), i64({0}, {1}), i64({kMax}, {1})});
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(values<float>((*b)[0]), (std::vector<float>{0}));
  EXPECT_FALSE(run_node("Pad", {x, i64({kMin, kMax}, {2})}).is_ok());
}

TEST(TensorSlice, OldOpsetAttributes) {
  Tensor x = f32({0, 1, 2, 3, 4, 5}, {2, 3});
  auto s = run_node("Slice", {x}, {attr_ints("starts", {1}), attr_ints("ends", {3}), attr_ints("axes", {1})}, 9);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(values<float>((*s)[0]), (std::vector<float>{1, 2, 4, 5}));
  ir::Attribute value;
  value.name = "value";
  value.type = ir::AttrType::kFloat;
  value.f = 7.f;
  auto p = run_node("Pad", {f32({1}, {1})}, {attr_ints("pads", {1, 1}), value}, 2);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(values<float>((*p)[0]), (std::vector<float>{7, 1, 7}));
}

}  // namespace
}  // namespace sdx::test
