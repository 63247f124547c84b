// sdx.FusedConv against the unfused Conv -> activation: bitwise, every activation and float
// type, grouped / strided / padded / pointwise / 1-D and 3-D convolutions; its bound form; a clamp
// after the activation (activation_clamp) against Max / Min, an affine map (activation_affine)
// against Mul / Add. With a
// residual R (4th input) against the unfused Conv -> Add(R) -> activation, bitwise, the same way.
#include "backend/cpu/onednn/onednn.h"
#include "fused_test_util.h"

namespace sdx::test {
namespace {

NodeSpec fused_conv(std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs) {
  return NodeSpec{
      .op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = std::move(inputs), .attrs = std::move(attrs)};
}

std::vector<ir::Attribute> with(std::vector<ir::Attribute> conv, const std::vector<ir::Attribute>& act) {
  conv.insert(conv.end(), act.begin(), act.end());
  return conv;
}

TEST(FusedConv, MatchesConvActivationBitwise) {
  for (DType dt : float_dtypes()) {
    const Tensor x = random_tensor(dt, {2, 4, 7, 6}, 1), w = random_tensor(dt, {6, 2, 3, 3}, 2, -0.5f, 0.5f);
    const Tensor b = random_tensor(dt, {6}, 3);
    const std::vector<ir::Attribute> conv = {attr_i("group", 2), attr_ints("pads", {1, 0, 1, 1}),
                                             attr_ints("strides", {2, 1})};
    const Tensor y = must_run("Conv", {x, w, b}, conv);
    const Tensor y_nb = must_run("Conv", {x, w}, conv);
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + a.name);
      auto fused = run_single(fused_conv({x, w, b}, with(conv, a.fused_attrs())));
      ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
      EXPECT_TRUE(same_bits(*fused, apply_activation(a, y)));
      auto no_bias = run_single(fused_conv({x, w}, with(conv, a.fused_attrs())));
      ASSERT_TRUE(no_bias.is_ok()) << no_bias.status().to_string();
      EXPECT_TRUE(same_bits(*no_bias, apply_activation(a, y_nb)));
    }
  }
}

TEST(FusedConv, PointwiseOneDAndThreeDAndAutoPad) {
  struct Case {
    std::vector<int64_t> x, w;
    std::vector<ir::Attribute> attrs;
  };
  const std::vector<Case> cases = {
      {{1, 8, 5, 5}, {4, 8, 1, 1}, {}},                                                   // pointwise gemm
      {{2, 3, 11}, {5, 3, 3}, {attr_ints("dilations", {2}), attr_ints("pads", {2, 1})}},  // 1-D
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, {attr_s("auto_pad", "SAME_UPPER")}},             // 3-D
  };
  const ActivationCase relu6 = all_activations()[11];
  for (const Case& c : cases) {
    const Tensor x = random_tensor(DType::kFloat32, c.x, 4), w = random_tensor(DType::kFloat32, c.w, 5);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 6);
    auto fused = run_single(fused_conv({x, w, b}, with(c.attrs, relu6.fused_attrs())));
    ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
    EXPECT_TRUE(same_bits(*fused, apply_activation(relu6, must_run("Conv", {x, w, b}, c.attrs))));
  }
}

TEST(FusedConv, BoundFormReplaysBitwise) {
  for (DType dt : float_dtypes()) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = random_tensor(dt, {1, 3, 6, 6}, 7), w = random_tensor(dt, {4, 3, 3, 3}, 8);
    const Tensor b = random_tensor(dt, {4}, 9);
    // float32 runs on oneDNN when built in, whose execute allocates its argument map.
    const HeapCheck heap =
        dt == DType::kFloat32 && cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
    expect_bound_matches(fused_conv({x, w, b}, {attr_ints("pads", {1, 1, 1, 1}), attr_s("activation", "relu")}),
                         {1, 2}, heap);
    expect_bound_matches(fused_conv({x, w}, {attr_s("activation", "hard_swish")}), {1}, heap);
  }
}

// activation_clamp: Max(LeakyRelu(Conv), c) and Min(Relu(Conv), c) as one FusedConv, bitwise, on
// oneDNN's direct kernel (group 1), the depthwise kernel (one channel per group, odd width for the
// tails) and float64's reference.
TEST(FusedConv, ClampAfterActivationMatchesMaxOrMinBitwise) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<int64_t> x, w;
    int64_t group;
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    for (const Case& c : {Case{{1, 5, 9, 7}, {6, 5, 3, 3}, 1}, Case{{1, 24, 7, 13}, {24, 1, 3, 3}, 24}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " group " + std::to_string(c.group));
      const Tensor x = random_tensor(dt, c.x, 14), w = random_tensor(dt, c.w, 15, -0.5f, 0.5f);
      const Tensor b = random_tensor(dt, {c.w[0]}, 16);
      const std::vector<ir::Attribute> conv = {attr_i("group", c.group), attr_ints("pads", {1, 1, 1, 1})};
      const Tensor y = must_run("Conv", {x, w, b}, conv);
      const Tensor leaky = must_run("LeakyRelu", {y}, {attr_f("alpha", 0.2f)});
      auto fused = run_single(fused_conv({x, w, b}, with(conv, {attr_s("activation", "leaky_relu"),
                                                                  attr_floats("activation_params", {0.2f}),
                                                                  attr_floats("activation_clamp", {-0.4f, kInf})})));
      ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
      EXPECT_TRUE(same_bits(*fused, must_run("Max", {leaky, scalar_of(dt, -0.4f)})));
      auto relu_min = run_single(
          fused_conv({x, w, b}, with(conv, {attr_s("activation", "relu"), attr_floats("activation_clamp", {-kInf, 0.5f})})));
      ASSERT_TRUE(relu_min.is_ok()) << relu_min.status().to_string();
      EXPECT_TRUE(same_bits(*relu_min, must_run("Min", {must_run("Relu", {y}), scalar_of(dt, 0.5f)})));
    }
  }
}

// activation_affine: Add(Mul(HardSwish(Conv), a), b) and Mul(Relu(Conv), a) as one FusedConv,
// bitwise, on oneDNN's direct kernel (group 1), the depthwise kernel (one channel per group, odd
// width for the tails) and float64's reference.
TEST(FusedConv, AffineAfterActivationMatchesMulAddBitwise) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t group;
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    for (const Case& c : {Case{{1, 5, 9, 7}, {6, 5, 3, 3}, 1}, Case{{1, 24, 7, 13}, {24, 1, 3, 3}, 24},
                          Case{{1, 16, 11, 11}, {16, 1, 3, 3}, 16}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " group " + std::to_string(c.group));
      const Tensor x = random_tensor(dt, c.x, 34), w = random_tensor(dt, c.w, 35, -0.5f, 0.5f);
      const Tensor b = random_tensor(dt, {c.w[0]}, 36);
      const std::vector<ir::Attribute> conv = {attr_i("group", c.group), attr_ints("pads", {1, 1, 1, 1})};
      const Tensor y = must_run("Conv", {x, w, b}, conv);
      const Tensor hs = must_run("HardSwish", {y});
      auto fused = run_single(fused_conv(
          {x, w, b}, with(conv, {attr_s("activation", "hard_swish"), attr_floats("activation_affine", {1.3f, -0.2f})})));
      ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
      EXPECT_TRUE(same_bits(*fused, must_run("Add", {must_run("Mul", {hs, scalar_of(dt, 1.3f)}), scalar_of(dt, -0.2f)})));
      auto relu_mul = run_single(
          fused_conv({x, w, b}, with(conv, {attr_s("activation", "relu"), attr_floats("activation_affine", {0.7f, -0.f})})));
      ASSERT_TRUE(relu_mul.is_ok()) << relu_mul.status().to_string();
      EXPECT_TRUE(same_bits(*relu_mul, must_run("Mul", {must_run("Relu", {y}), scalar_of(dt, 0.7f)})));
    }
  }
}

// act(Conv(X, W, B) + R): every float type (float32 2-D on oneDNN when built in, the others on the
// reference) and activation, odd channel counts, with and without bias, batch 2.
TEST(FusedConv, ResidualMatchesConvAddActivationBitwise) {
  for (DType dt : float_dtypes()) {
    const Tensor x = random_tensor(dt, {2, 5, 9, 7}, 21), w = random_tensor(dt, {7, 5, 3, 3}, 22, -0.5f, 0.5f);
    const Tensor b = random_tensor(dt, {7}, 23);
    const std::vector<ir::Attribute> conv = {attr_ints("pads", {1, 0, 1, 1})};
    const Tensor y = must_run("Conv", {x, w, b}, conv);
    const Tensor y_nb = must_run("Conv", {x, w}, conv);
    const Tensor r = random_tensor(dt, y.shape().dims(), 24);
    for (const ActivationCase& a : all_activations()) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + a.name);
      auto fused = run_single(fused_conv({x, w, b, r}, with(conv, a.fused_attrs())));
      ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
      EXPECT_TRUE(same_bits(*fused, apply_activation(a, must_run("Add", {y, r}))));
      auto no_bias = run_single(fused_conv({x, w, Tensor(), r}, with(conv, a.fused_attrs())));
      ASSERT_TRUE(no_bias.is_ok()) << no_bias.status().to_string();
      EXPECT_TRUE(same_bits(*no_bias, apply_activation(a, must_run("Add", {y_nb, r}))));
    }
  }
}

// The reference path with a residual: 1-D, 3-D, grouped and pointwise convolutions.
TEST(FusedConv, ResidualOnOtherShapes) {
  struct Case {
    std::vector<int64_t> x, w;
    std::vector<ir::Attribute> attrs;
  };
  const std::vector<Case> cases = {
      {{1, 8, 5, 5}, {4, 8, 1, 1}, {}},                                                   // pointwise gemm
      {{2, 3, 11}, {5, 3, 3}, {attr_ints("dilations", {2}), attr_ints("pads", {2, 1})}},  // 1-D
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, {attr_s("auto_pad", "SAME_UPPER")}},             // 3-D
      {{1, 6, 6, 5}, {9, 2, 3, 3}, {attr_i("group", 3), attr_ints("strides", {2, 1})}},   // grouped
  };
  const ActivationCase relu = all_activations()[1];
  for (const Case& c : cases) {
    const Tensor x = random_tensor(DType::kFloat32, c.x, 25), w = random_tensor(DType::kFloat32, c.w, 26);
    const Tensor b = random_tensor(DType::kFloat32, {c.w[0]}, 27);
    const Tensor y = must_run("Conv", {x, w, b}, c.attrs);
    const Tensor r = random_tensor(DType::kFloat32, y.shape().dims(), 28);
    auto fused = run_single(fused_conv({x, w, b, r}, with(c.attrs, relu.fused_attrs())));
    ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
    EXPECT_TRUE(same_bits(*fused, apply_activation(relu, must_run("Add", {y, r}))));
  }
}

TEST(FusedConv, ResidualBoundFormReplaysBitwise) {
  for (DType dt : float_dtypes()) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = random_tensor(dt, {1, 3, 6, 6}, 29), w = random_tensor(dt, {5, 3, 3, 3}, 30);
    const Tensor b = random_tensor(dt, {5}, 31), r = random_tensor(dt, {1, 5, 6, 6}, 32);
    const Tensor r_valid = random_tensor(dt, {1, 5, 4, 4}, 33);
    const HeapCheck heap =
        dt == DType::kFloat32 && cpu::onednn_enabled() ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone;
    expect_bound_matches(fused_conv({x, w, b, r}, {attr_ints("pads", {1, 1, 1, 1}), attr_s("activation", "relu")}),
                         {1, 2}, heap);
    expect_bound_matches(fused_conv({x, w, Tensor(), r_valid}, {attr_s("activation", "sigmoid")}), {1}, heap);
    // A constant residual (an initializer) reads the same.
    expect_bound_matches(fused_conv({x, w, b, r_valid}, {}), {1, 2, 3}, heap);
  }
}

TEST(FusedConv, BadInputsAreErrors) {
  const Tensor x = random_tensor(DType::kFloat32, {1, 3, 6, 6}, 10);
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 2, 3, 3}, 11)}, {})).is_ok());
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11),
                                      random_tensor(DType::kFloat32, {3}, 12)},
                                     {}))
                   .is_ok());
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11)},
                                     {attr_s("activation", "leaky_relu"), attr_floats("activation_params", {1, 2})}))
                   .is_ok());
  // A clamp after an activation without a clamped form, or of the wrong length.
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11)},
                                     {attr_s("activation", "sigmoid"), attr_floats("activation_clamp", {0, 1})}))
                   .is_ok());
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11)},
                                     {attr_s("activation", "relu"), attr_floats("activation_clamp", {0})}))
                   .is_ok());
  // An affine map after an activation without that form, with a clamp, or of the wrong length.
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11)},
                                     {attr_s("activation", "sigmoid"), attr_floats("activation_affine", {2, 1})}))
                   .is_ok());
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11)},
                                     {attr_s("activation", "relu"), attr_floats("activation_clamp", {0, 6}),
                                      attr_floats("activation_affine", {2, 1})}))
                   .is_ok());
  EXPECT_FALSE(run_single(fused_conv({x, random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11)},
                                     {attr_s("activation", "hard_swish"), attr_floats("activation_affine", {2})}))
                   .is_ok());
  // A residual of another shape (it does not broadcast) or type.
  const Tensor w = random_tensor(DType::kFloat32, {4, 3, 3, 3}, 11);
  EXPECT_FALSE(run_single(fused_conv({x, w, Tensor(), random_tensor(DType::kFloat32, {1, 4, 1, 1}, 13)}, {})).is_ok());
  EXPECT_FALSE(run_single(fused_conv({x, w, Tensor(), random_tensor(DType::kFloat64, {1, 4, 4, 4}, 13)}, {})).is_ok());
}

}  // namespace
}  // namespace sdx::test
