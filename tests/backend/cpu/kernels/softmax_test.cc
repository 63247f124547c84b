#include <cmath>

#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(Softmax, LastAxis) {
  auto y = run_node("Softmax", {f32({0, std::log(3.f), 1000, 1000}, {2, 2})}, {}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {0.25f, 0.75f, 0.5f, 0.5f});
}

TEST(Softmax, Opset11CoercesTo2D) {
  // axis=1 on [1, 2, 2]: softmax over all 4 elements (not per column as in opset 13).
  auto y = run_node("Softmax", {f32({0, 0, 0, 0}, {1, 2, 2})}, {attr_i("axis", 1)}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {0.25f, 0.25f, 0.25f, 0.25f});
  auto y13 = run_node("Softmax", {f32({0, 0, 0, 0}, {1, 2, 2})}, {attr_i("axis", 1)}, 13);
  ASSERT_TRUE(y13.is_ok());
  expect_near(values<float>((*y13)[0]), {0.5f, 0.5f, 0.5f, 0.5f});
}

TEST(Softmax, LogSoftmaxAndHardmax) {
  auto ls = run_node("LogSoftmax", {f32({1, 1}, {2})}, {}, 13);
  ASSERT_TRUE(ls.is_ok());
  expect_near(values<float>((*ls)[0]), {-std::log(2.f), -std::log(2.f)});
  auto hm = run_node("Hardmax", {f32({1, 3, 3, 2}, {2, 2})}, {attr_i("axis", 0)}, 13);
  ASSERT_TRUE(hm.is_ok());
  EXPECT_EQ(values<float>((*hm)[0]), (std::vector<float>{0, 1, 1, 0}));
}

TEST(Softmax, BadAxisAndTypeAreErrors) {
  EXPECT_FALSE(run_node("Softmax", {f32({1, 2}, {2})}, {attr_i("axis", 1)}, 13).is_ok());
  EXPECT_FALSE(run_node("Softmax", {i64({1, 2}, {2})}, {}, 13).is_ok());
}

}  // namespace
}  // namespace sdx
