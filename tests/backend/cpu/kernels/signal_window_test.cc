#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(WindowKernel, PeriodicHann) {
  auto ys = run_node("HannWindow", {i64({4}, {})}, {}, 17);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {0, 0.5f, 1, 0.5f});
}

TEST(WindowKernel, SymmetricHamming) {
  auto ys = run_node("HammingWindow", {i64({3}, {})}, {attr_i("periodic", 0)}, 17);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  const float edge = 25.0f / 46.0f - 21.0f / 46.0f;
  expect_near((*ys)[0], {edge, 1, edge});
}

TEST(WindowKernel, RejectsNegativeSize) { EXPECT_FALSE(run_node("BlackmanWindow", {i64({-1}, {})}, {}, 17).is_ok()); }

TEST(MelWeightMatrixKernel, Shape) {
  auto ys = run_node("MelWeightMatrix", {i64({4}, {}), i64({16}, {}), i64({8000}, {}), f32({0}, {}), f32({4000}, {})}, {}, 17);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  EXPECT_EQ((*ys)[0].shape(), (Shape{9, 4}));
}

}  // namespace
}  // namespace sdx::test
