#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(LinearAttentionKernel, LinearRuleAccumulatesState) {
  // S1 = 1*3 = 3, o1 = 3; S2 = 3 + 2*4 = 11, o2 = 11.
  auto ys = run_node("LinearAttention", {f32({1, 1}, {1, 2, 1}), f32({1, 2}, {1, 2, 1}), f32({3, 4}, {1, 2, 1})},
                     {attr_i("q_num_heads", 1), attr_i("kv_num_heads", 1), attr_s("update_rule", "linear"), attr_f("scale", 1.0f)}, 27, 2);
  ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
  expect_near((*ys)[0], {3, 11});
  expect_near((*ys)[1], {11});
}

TEST(LinearAttentionKernel, GatedRuleNeedsDecay) {
  EXPECT_FALSE(run_node("LinearAttention", {f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1})},
                        {attr_i("q_num_heads", 1), attr_i("kv_num_heads", 1), attr_s("update_rule", "gated")}, 27, 2)
                        .is_ok());
}

}  // namespace
}  // namespace sdx::test
