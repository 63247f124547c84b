// Shared helpers for the fused-op kernel tests (fused_*_test.cc): deterministic inputs in any
// float type, every epilogue activation with the ONNX op that computes it unfused, and running
// that ONNX activation on a tensor as the reference.
//
//   for (const ActivationCase& a : all_activations()) {
//     Tensor fused = run_single(NodeSpec{.op = "Linear", .domain = "sdx", .opset = 1, .inputs = {x, w, b},
//                                        .attrs = a.fused_attrs()}).value();
//     Tensor ref = apply_activation(a, run_single("Add", {run_single("MatMul", {x, w}).value(), b}).value());
//     EXPECT_TRUE(same_bits(fused, ref)) << a.name;
//   }
#pragma once

#include <random>
#include <string>
#include <vector>

#include "bound_test_util.h"
#include "core/float16.h"
#include "kernel_test_util.h"

namespace sdx::test {

// Values in [lo, hi) of type dt (16-bit floats rounded from float).
inline Tensor random_tensor(DType dt, const std::vector<int64_t>& dims, unsigned seed, float lo = -3.f,
                            float hi = 3.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t = Tensor::allocate(dt, Shape(dims)).value();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = dist(gen);
    switch (dt) {
      case DType::kFloat32:
        t.data<float>()[i] = v;
        break;
      case DType::kFloat64:
        t.data<double>()[i] = v;
        break;
      case DType::kFloat16:
        t.data<Float16>()[i] = Float16::from_float(v);
        break;
      case DType::kBFloat16:
        t.data<BFloat16>()[i] = BFloat16::from_float(v);
        break;
      default:
        break;
    }
  }
  return t;
}

// One epilogue activation: its sdx attributes and the ONNX node computing it unfused.
struct ActivationCase {
  std::string name;
  std::vector<float> params;
  std::string onnx_op;  // "" for "none"
  std::vector<ir::Attribute> onnx_attrs;
  int opset = 21;
  bool clip_inputs = false;  // Clip's bounds as inputs params[0], params[1]

  std::vector<ir::Attribute> fused_attrs() const {
    std::vector<ir::Attribute> a = {attr_s("activation", name)};
    if (!params.empty()) a.push_back(attr_floats("activation_params", params));
    return a;
  }
};

inline std::vector<ActivationCase> all_activations() {
  return {
      {"none", {}, "", {}},
      {"relu", {}, "Relu", {}},
      {"leaky_relu", {0.1f}, "LeakyRelu", {attr_f("alpha", 0.1f)}},
      {"sigmoid", {}, "Sigmoid", {}},
      {"tanh", {}, "Tanh", {}},
      {"gelu", {}, "Gelu", {}, 20},
      {"gelu_tanh", {}, "Gelu", {attr_s("approximate", "tanh")}, 20},
      {"silu", {}, "Swish", {}, 24},
      {"silu", {1.5f}, "Swish", {attr_f("alpha", 1.5f)}, 24},
      {"hard_sigmoid", {0.25f, 0.4f}, "HardSigmoid", {attr_f("alpha", 0.25f), attr_f("beta", 0.4f)}},
      {"hard_swish", {}, "HardSwish", {}, 14},
      {"clip", {0.f, 6.f}, "Clip", {}, 13, true},
      {"clip", {-1.f, 0.5f}, "Clip", {}, 13, true},
  };
}

// A one-element tensor of dt holding v.
inline Tensor scalar_of(DType dt, float v) {
  Tensor t = Tensor::allocate(dt, Shape(std::vector<int64_t>{})).value();
  switch (dt) {
    case DType::kFloat32:
      t.data<float>()[0] = v;
      break;
    case DType::kFloat64:
      t.data<double>()[0] = v;
      break;
    case DType::kFloat16:
      t.data<Float16>()[0] = Float16::from_float(v);
      break;
    case DType::kBFloat16:
      t.data<BFloat16>()[0] = BFloat16::from_float(v);
      break;
    default:
      break;
  }
  return t;
}

// The unfused activation applied to y (y itself for "none").
inline Tensor apply_activation(const ActivationCase& a, const Tensor& y) {
  if (a.onnx_op.empty()) return y;
  std::vector<Tensor> in = {y};
  if (a.clip_inputs) {
    in.push_back(scalar_of(y.dtype(), a.params[0]));
    in.push_back(scalar_of(y.dtype(), a.params[1]));
  }
  auto r = run_single(a.onnx_op, in, a.onnx_attrs, a.opset);
  EXPECT_TRUE(r.is_ok()) << a.onnx_op << ": " << r.status().to_string();
  return r.is_ok() ? r.value() : Tensor();
}

// Runs op (default domain) and fails the test on error.
inline Tensor must_run(const std::string& op, std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {},
                       int opset = 21) {
  auto r = run_single(op, std::move(inputs), std::move(attrs), opset);
  EXPECT_TRUE(r.is_ok()) << op << ": " << r.status().to_string();
  return r.is_ok() ? r.value() : Tensor();
}

// sdx.FusedConv of x, w, b with activation `a` (its attributes added to conv_attrs) equals the
// activation of y = Conv(x, w, b) bit for bit, and with the residual r, the activation of yr = y + r.
inline void expect_fused_conv_bits(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r,
                                   std::vector<ir::Attribute> conv_attrs, const ActivationCase& a, const Tensor& y,
                                   const Tensor& yr) {
  for (const ir::Attribute& at : a.fused_attrs()) conv_attrs.push_back(at);
  auto fused = run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b}, .attrs = conv_attrs});
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  EXPECT_TRUE(same_bits(*fused, apply_activation(a, y)));
  auto with_r =
      run_single(NodeSpec{.op = "FusedConv", .domain = "sdx", .opset = 1, .inputs = {x, w, b, r}, .attrs = conv_attrs});
  ASSERT_TRUE(with_r.is_ok()) << with_r.status().to_string();
  EXPECT_TRUE(same_bits(*with_r, apply_activation(a, yr)));
}

inline const std::vector<DType>& float_dtypes() {
  static const std::vector<DType> k = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  return k;
}

}  // namespace sdx::test
