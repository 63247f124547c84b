// Activations: Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish,
// Softplus, Softsign, Tanh, Gelu, Mish, Swish, ThresholdedRelu, Shrink.
// Float attributes are read once at load; 16-bit floats compute in float. The functors the
// fused ops share (Relu, Sigmoid, Gelu, Swish, ...) live in backend/cpu/kernels/util/activation.h.
//
// NaN: every activation maps NaN to NaN, as the ONNX reference does (activation.h), except the two
// whose ONNX definition selects a constant 0 when a comparison fails: ThresholdedRelu
// (np.where(x > alpha, x, 0)) and Shrink (0 unless x < -lambd or x > lambd) give 0 for NaN in the
// reference, and here. tests/python/test_nan_semantics.py checks each of them.
#include <cmath>
#include <type_traits>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/elementwise.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using FloatTypes = Types<SDX_FLOAT_TYPES>;

template <typename C>
C softplus(C x) {
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

struct EluOp {
  float alpha = 1.f;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", 1.f);
    return Status::ok();
  }
  template <typename C>
  C operator()(C x) const { return x >= C(0) ? x : C(alpha) * std::expm1(x); }
};
struct SeluOp {
  float alpha = 1.67326319217681884765625f, gamma = 1.05070102214813232421875f;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", alpha);
    gamma = node.attr_float("gamma", gamma);
    return Status::ok();
  }
  template <typename C>
  C operator()(C x) const { return C(gamma) * (x > C(0) ? x : C(alpha) * std::expm1(x)); }
};
struct CeluOp {
  float alpha = 1.f;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", 1.f);
    if (alpha == 0.f) return invalid_argument("attribute 'alpha' must be non-zero");
    return Status::ok();
  }
  template <typename C>
  C operator()(C x) const { return x > C(0) ? x : C(alpha) * std::expm1(x / C(alpha)); }
};
struct SoftplusOp : NoAttrs {
  template <typename C>
  C operator()(C x) const { return softplus(x); }
};
struct SoftsignOp : NoAttrs {
  template <typename C>
  C operator()(C x) const { return x / (C(1) + std::fabs(x)); }
};
struct MishOp : NoAttrs {
  template <typename C>
  C operator()(C x) const { return x * std::tanh(softplus(x)); }
};
// NaN gives 0, as in the ONNX reference (see the file comment).
struct ThresholdedReluOp {
  float alpha = 1.f;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", 1.f);
    return Status::ok();
  }
  template <typename C>
  C operator()(C x) const { return x > C(alpha) ? x : C(0); }
};
// Shrink also takes integers: thresholds compare in double, the result converts back. NaN gives 0,
// as in the ONNX reference (see the file comment).
struct ShrinkOp {
  float bias = 0.f, lambd = 0.5f;
  Status init(const ir::Node& node) {
    bias = node.attr_float("bias", 0.f);
    lambd = node.attr_float("lambd", 0.5f);
    if (lambd < 0.f) return invalid_argument("attribute 'lambd' must be >= 0, got " + std::to_string(lambd));
    return Status::ok();
  }
  template <typename C>
  C operator()(C x) const {
    const double v = static_cast<double>(x);
    if (v < -static_cast<double>(lambd)) return saturating_cast<C>(v + static_cast<double>(bias));
    if (v > static_cast<double>(lambd)) return saturating_cast<C>(v - static_cast<double>(bias));
    return C(0);
  }
};

using backend::kAnyOpset;
using backend::kernel_factory;
using backend::KernelDef;
using backend::KernelRegistrar;

template <typename Op>
KernelDef float_activation(const char* name) {
  return {name, "", 1, kAnyOpset, kernel_factory<UnaryKernel<Op, FloatTypes>>()};
}

const KernelRegistrar kRelu({"Relu", "", 1, kAnyOpset,
                             kernel_factory<UnaryKernel<ReluOp, Types<SDX_FLOAT_TYPES, int8_t, int16_t, int32_t, int64_t>>>()});
const KernelRegistrar kLeakyRelu(float_activation<LeakyReluOp>("LeakyRelu"));
const KernelRegistrar kElu(float_activation<EluOp>("Elu"));
const KernelRegistrar kSelu(float_activation<SeluOp>("Selu"));
const KernelRegistrar kCelu(float_activation<CeluOp>("Celu"));
const KernelRegistrar kSigmoid(float_activation<SigmoidOp>("Sigmoid"));
const KernelRegistrar kHardSigmoid(float_activation<HardSigmoidOp>("HardSigmoid"));
const KernelRegistrar kHardSwish(float_activation<HardSwishOp>("HardSwish"));
const KernelRegistrar kSoftplus(float_activation<SoftplusOp>("Softplus"));
const KernelRegistrar kSoftsign(float_activation<SoftsignOp>("Softsign"));
const KernelRegistrar kTanh(float_activation<TanhOp>("Tanh"));
const KernelRegistrar kGelu(float_activation<GeluOp>("Gelu"));
const KernelRegistrar kMish(float_activation<MishOp>("Mish"));
const KernelRegistrar kSwish(float_activation<SwishOp>("Swish"));
const KernelRegistrar kThresholdedRelu(float_activation<ThresholdedReluOp>("ThresholdedRelu"));
const KernelRegistrar kShrink({"Shrink", "", 1, kAnyOpset,
                               kernel_factory<UnaryKernel<ShrinkOp, Types<SDX_NUMERIC_TYPES>>>()});

}  // namespace
}  // namespace sdx::cpu
