// Tests for src/backend/cpu/kernels/training_ops.cc (Adagrad, Adam, Momentum).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace sdx::test;

constexpr const char* kDomain = "ai.onnx.preview.training";

TEST(TrainingOpsKernel, AdagradHandChecked) {
  // r' = 0.1 / (1 + 1 * 0.5) = 1/15; g = 0.5*1 + 1 = 1.5; h = 0 + 2.25; x = 1 - (1/15)*1.5/(1.5 + 0)
  auto out = run_node_datums(
      {.op = "Adagrad",
       .domain = kDomain,
       .opset = 1,
       .inputs = {f32({0.1f}, {}), i64({1}, {}), f32({1.f}, {1}), f32({1.f}, {1}), f32({0.f}, {1})},
       .attrs = {attr_f("norm_coefficient", 0.5f), attr_f("decay_factor", 0.5f), attr_f("epsilon", 0.f)},
       .num_outputs = 2});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_NEAR(values((*out)[0])[0], 1.f - 1.f / 15.f, 1e-6);
  EXPECT_NEAR(values((*out)[1])[0], 2.25f, 1e-6);
}

TEST(TrainingOpsKernel, AdamTwoTensorsLayout) {
  // t = 0: no bias correction. alpha = beta = 0.5, eps = 0: v = g/2, h = g^2/2,
  // x_new = x - r * v / sqrt(h) = x - r * sign(g) / sqrt(2).
  auto out = run_node_datums(
      {.op = "Adam",
       .domain = kDomain,
       .opset = 1,
       .inputs = {f32({1.f}, {}), i64({0}, {}), f32({1.f}, {1}), f32({2.f, 3.f}, {2}), f32({4.f}, {1}),
                  f32({-1.f, 1.f}, {2}), f32({0.f}, {1}), f32({0.f, 0.f}, {2}), f32({0.f}, {1}), f32({0.f, 0.f}, {2})},
       .attrs = {attr_f("alpha", 0.5f), attr_f("beta", 0.5f), attr_f("epsilon", 0.f)},
       .num_outputs = 6});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const float k = 1.f / std::sqrt(2.f);
  EXPECT_NEAR(values((*out)[0])[0], 1.f - k, 1e-6);
  auto x2 = values((*out)[1]);
  EXPECT_NEAR(x2[0], 2.f + k, 1e-6);
  EXPECT_NEAR(x2[1], 3.f - k, 1e-6);
  EXPECT_NEAR(values((*out)[2])[0], 2.f, 1e-6);   // v1 = 4/2
  EXPECT_NEAR(values((*out)[5])[1], 0.5f, 1e-6);  // h2[1] = 1/2
}

TEST(TrainingOpsKernel, MomentumStandardAndNesterov) {
  // t = 1: v = 0.9*1 + 0.1*2 = 1.1; standard x = 1 - 0.5*1.1; nesterov x = 1 - 0.5*(2 + 0.9*1.1).
  std::vector<ir::Attribute> attrs = {attr_f("alpha", 0.9f), attr_f("beta", 0.1f), attr_f("norm_coefficient", 0.f),
                                      attr_s("mode", "standard")};
  std::vector<Tensor> in = {f32({0.5f}, {}), i64({1}, {}), f32({1.f}, {1}), f32({2.f}, {1}), f32({1.f}, {1})};
  auto std_out = run_node_datums(
      {.op = "Momentum", .domain = kDomain, .opset = 1, .inputs = in, .attrs = attrs, .num_outputs = 2});
  ASSERT_TRUE(std_out.is_ok()) << std_out.status().to_string();
  EXPECT_NEAR(values((*std_out)[0])[0], 1.f - 0.55f, 1e-6);
  EXPECT_NEAR(values((*std_out)[1])[0], 1.1f, 1e-6);
  attrs[3] = attr_s("mode", "nesterov");
  auto nes_out = run_node_datums(
      {.op = "Momentum", .domain = kDomain, .opset = 1, .inputs = in, .attrs = attrs, .num_outputs = 2});
  ASSERT_TRUE(nes_out.is_ok()) << nes_out.status().to_string();
  EXPECT_NEAR(values((*nes_out)[0])[0], 1.f - 0.5f * (2.f + 0.99f), 1e-6);
}

TEST(TrainingOpsKernel, RejectsBadInputs) {
  // Gradient shape differs from X.
  auto bad_shape = run_node_datums(
      {.op = "Adagrad",
       .domain = kDomain,
       .opset = 1,
       .inputs = {f32({0.1f}, {}), i64({0}, {}), f32({1.f, 2.f}, {2}), f32({1.f}, {1}), f32({0.f, 0.f}, {2})},
       .num_outputs = 2});
  EXPECT_FALSE(bad_shape.is_ok());
  // Input count not 2 + 3n.
  auto bad_arity = run_node_datums(
      {.op = "Momentum",
       .domain = kDomain,
       .opset = 1,
       .inputs = {f32({0.1f}, {}), i64({0}, {}), f32({1.f}, {1}), f32({1.f}, {1}), f32({0.f}, {1}), f32({0.f}, {1})},
       .attrs = {attr_f("alpha", 0.9f), attr_f("beta", 0.1f), attr_f("norm_coefficient", 0.f),
                 attr_s("mode", "standard")},
       .num_outputs = 2});
  EXPECT_FALSE(bad_arity.is_ok());
  // Unknown mode.
  auto bad_mode =
      run_node_datums({.op = "Momentum",
                       .domain = kDomain,
                       .opset = 1,
                       .inputs = {f32({0.1f}, {}), i64({0}, {}), f32({1.f}, {1}), f32({1.f}, {1}), f32({0.f}, {1})},
                       .attrs = {attr_f("alpha", 0.9f), attr_f("beta", 0.1f), attr_f("norm_coefficient", 0.f),
                                 attr_s("mode", "sideways")},
                       .num_outputs = 2});
  EXPECT_FALSE(bad_mode.is_ok());
  // T must be int64.
  auto bad_t =
      run_node_datums({.op = "Adagrad",
                       .domain = kDomain,
                       .opset = 1,
                       .inputs = {f32({0.1f}, {}), f32({1.f}, {}), f32({1.f}, {1}), f32({1.f}, {1}), f32({0.f}, {1})},
                       .num_outputs = 2});
  EXPECT_FALSE(bad_t.is_ok());
}

TEST(TrainingOpsKernel, ZeroSizedTensors) {
  auto out = run_node_datums({.op = "Adagrad",
                              .domain = kDomain,
                              .opset = 1,
                              .inputs = {f32({0.1f}, {}), i64({0}, {}), f32({}, {0}), f32({}, {0}), f32({}, {0})},
                              .num_outputs = 2});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].as_tensor().numel(), 0);
}

}  // namespace
}  // namespace sdx
