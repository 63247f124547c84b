// sdx.GatedLinearUnit against the unfused activation -> Mul (and Split -> activation -> Mul):
// bitwise, every activation and float type, broadcasting; its bound form.
#include "fused_test_util.h"

namespace sdx::test {
namespace {

NodeSpec glu(std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs) {
  return NodeSpec{
      .op = "GatedLinearUnit", .domain = "sdx", .opset = 1, .inputs = std::move(inputs), .attrs = std::move(attrs)};
}

TEST(FusedGlu, TwoInputsMatchActivationTimesGateBitwise) {
  for (DType dt : float_dtypes()) {
    const Tensor a = random_tensor(dt, {3, 4, 10}, 1), b = random_tensor(dt, {3, 4, 10}, 2);
    const Tensor row = random_tensor(dt, {10}, 3);  // B broadcast along the leading dims
    for (const ActivationCase& act : all_activations()) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + act.name);
      const Tensor gate = apply_activation(act, a);
      auto y = run_single(glu({a, b}, act.fused_attrs()));
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      EXPECT_TRUE(same_bits(*y, must_run("Mul", {gate, b})));
      auto yb = run_single(glu({a, row}, act.fused_attrs()));
      ASSERT_TRUE(yb.is_ok()) << yb.status().to_string();
      EXPECT_TRUE(same_bits(*yb, must_run("Mul", {gate, row})));
    }
  }
}

TEST(FusedGlu, SplitFormMatchesSplitActivationMulBitwise) {
  for (DType dt : float_dtypes()) {
    const Tensor x = random_tensor(dt, {2, 6, 8}, 4);
    for (int64_t axis : {-1, 1, 0}) {
      for (const char* name : {"silu", "gelu", "gelu_tanh", "sigmoid"}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + name + " axis " + std::to_string(axis));
        ActivationCase act;
        for (const ActivationCase& c : all_activations())
          if (c.name == name && c.params.empty()) act = c;
        auto halves = run_node("Split", {x}, {attr_i("axis", axis), attr_i("num_outputs", 2)}, 18, 2);
        ASSERT_TRUE(halves.is_ok()) << halves.status().to_string();
        const Tensor want = must_run("Mul", {apply_activation(act, (*halves)[0]), (*halves)[1]});
        std::vector<ir::Attribute> attrs = act.fused_attrs();
        attrs.push_back(attr_i("axis", axis));
        auto y = run_single(glu({x}, attrs));
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        EXPECT_TRUE(same_bits(*y, want));
      }
    }
  }
}

TEST(FusedGlu, BoundFormReplaysBitwise) {
  for (DType dt : float_dtypes()) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor a = random_tensor(dt, {4, 6}, 5), b = random_tensor(dt, {4, 6}, 6);
    expect_bound_matches(glu({a, b}, {attr_s("activation", "silu")}));
    expect_bound_matches(glu({a, random_tensor(dt, {1, 6}, 7)}, {attr_s("activation", "gelu")}));
    expect_bound_matches(glu({random_tensor(dt, {3, 8}, 8)}, {attr_s("activation", "gelu_tanh"), attr_i("axis", 1)}));
  }
}

TEST(FusedGlu, BadInputsAreErrors) {
  EXPECT_FALSE(run_single(glu({random_tensor(DType::kFloat32, {2, 5}, 9)}, {attr_i("axis", 1)})).is_ok());  // odd
  EXPECT_FALSE(run_single(glu({random_tensor(DType::kFloat32, {2, 4}, 9)}, {attr_i("axis", 2)})).is_ok());  // axis
  EXPECT_FALSE(
      run_single(glu({random_tensor(DType::kFloat32, {2, 4}, 9), random_tensor(DType::kFloat32, {3, 4}, 10)}, {}))
          .is_ok());  // shapes do not broadcast
  EXPECT_FALSE(
      run_single(glu({random_tensor(DType::kFloat32, {2, 4}, 9), random_tensor(DType::kFloat64, {2, 4}, 10)}, {}))
          .is_ok());  // types differ
}

}  // namespace
}  // namespace sdx::test
