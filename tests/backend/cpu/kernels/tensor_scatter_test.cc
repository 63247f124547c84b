#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(TensorScatter, ScatterElementsAdd) {
  auto ys = run_node("ScatterElements", {f32({1, 2, 3}, {3}), i64({1, 1, -1}, {3}), f32({10, 20, 30}, {3})},
                     {attr_s("reduction", "add")});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 32, 33}));
}

TEST(TensorScatter, ScatterElementsOutOfRangeFails) {
  EXPECT_FALSE(run_node("ScatterElements", {f32({1, 2, 3}, {3}), i64({3}, {1}), f32({10}, {1})}).is_ok());
  EXPECT_FALSE(run_node("ScatterElements", {f32({1, 2, 3}, {3}), i64({0, 1}, {2}), f32({10}, {1})}).is_ok());
}

TEST(TensorScatter, ScatterNDSlicesWithMax) {
  auto ys = run_node("ScatterND", {f32({1, 2, 3, 4}, {2, 2}), i64({1}, {1, 1}), f32({0, 9}, {1, 2})},
                     {attr_s("reduction", "max")});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 2, 3, 9}));
}

TEST(TensorScatter, ScatterNDBadInputsFail) {
  Tensor x = f32({1, 2, 3, 4}, {2, 2});
  EXPECT_FALSE(run_node("ScatterND", {x, i64({2}, {1, 1}), f32({0, 9}, {1, 2})}).is_ok());
  EXPECT_FALSE(run_node("ScatterND", {x, i64({1}, {1, 1}), f32({0, 9, 1}, {1, 3})}).is_ok());
}

TEST(TensorScatter, ScatterNDStrings) {
  auto ys = run_node("ScatterND", {strs({"a", "b"}, {2}), i64({0}, {1, 1}), strs({"z"}, {1})});
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ(values<std::string>((*ys)[0]), (std::vector<std::string>{"z", "b"}));
}

}  // namespace
}  // namespace sdx::test
