// Activation functors shared by the element-wise activation kernels
// (kernels/elementwise_activation.cc) and the fused ops' epilogues (kernels/fused_*.cc),
// so that a fused op applies bit for bit the formula the unfused ONNX op applies.
//
// A functor maps one value of the compute type C (float for 16-bit floats) to another:
//   GeluOp gelu;  gelu.tanh_approx = true;  float y = gelu(x);
//
// Float rows: Sigmoid, Tanh, Gelu and Swish compute float on the vector kernels
// (simd/vector_ops.h, about 1-3 ulp from the exact value) through their row() member; their
// float operator() runs row() on one element, so a fused op's per-element epilogue and the
// element-wise kernel's rows give the same bits. double keeps the libm formulas.
//
// FusedActivation is the epilogue of the "sdx" fused ops: parsed once from the node's
// attributes `activation` (a name) and `activation_params` (floats), then visit() hands
// the concrete functor to a loop, so the loop is compiled once per activation with no
// per-element switch:
//   SDX_ASSIGN_OR_RETURN(FusedActivation act, FusedActivation::from_node(node), "");
//   act.visit([&](auto f) { for (int64_t i = 0; i < n; ++i) y[i] = f(y[i]); });
//
//   activation     activation_params   computes (the ONNX op it stands for)
//   "none"         -                   x
//   "leaky_relu"   [alpha=0.01]        LeakyRelu(alpha)
//   "clip"         [min, max]          Clip(min, max) (min(max(x, lo), hi), NaN passes)
//   with activation_clamp [lo, hi] (after relu or leaky_relu): Clip(lo, hi) of the activation
//   with activation_affine [scale, shift] (after hard_swish or relu): act * scale + shift
//   ... every name, its ONNX op and its parameters with their defaults: ir/activation_defs.inc.
//
// NaN and infinities: every functor propagates a NaN input to a NaN output, as the ONNX reference
// (onnx.reference, numpy's NaN-propagating maximum/minimum) does, so a NaN in a model
// is never hidden behind a number (Relu(NaN) is NaN, not 0; HardSigmoid(NaN) is NaN, not 1). The
// clamps are therefore written `x < lo ? lo : x` (false for NaN: x passes), never
// `x > lo ? x : lo` or fmax/fmin (which return the number); on x86 they compile to max(lo, x) /
// min(hi, x), never max(x, lo): maxps/minps return their second operand when either is NaN. Relu is
// `x <= 0 ? 0 : x`: NaN passes, and -0 and negatives give +0 (what numpy's maximum(x, 0) and oneDNN
// give). tests/backend/cpu/kernels/util/activation_test.cc pins this for the scalar functors and for every lane
// and tail position of epilogue_row; tests/python/test_nan_semantics.py checks the kernels, fused
// ops and JIT segments against onnx.reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/kernels/util/float_row.h"
#include "ir/activation.h"
#include "backend/cpu/simd/vector_ops.h"
#include "core/status.h"
#include "ir/graph.h"

namespace sdx::cpu {

template <typename C>
C sigmoid(C x) {
  // Split by sign so exp never overflows.
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

// The element type of a GCC/Clang vector V (the lane forms, float_row.h).
template <typename V>
using lane_t = std::remove_cvref_t<decltype(std::declval<V>()[0])>;

// max(lo, x) and min(hi, x) that let a NaN x through (see the header comment). For integers and,
// lane by lane, for vectors too.
template <typename C>
inline C clamp_below(C x, C lo) {
  return x < lo ? lo : x;
}
template <typename C>
inline C clamp_above(C x, C hi) {
  return x > hi ? hi : x;
}

// The functors below with a lanes() member do per lane exactly what operator() does (float_row.h).
struct IdentityActivation {
  static constexpr bool kWideLanes = true;
  Status init(const ir::Node&) { return Status::ok(); }
  template <typename V>
  V lanes(V v) const {
    return v;
  }
  template <typename C>
  C operator()(C x) const {
    return x;
  }
};
struct ReluOp {
  static constexpr bool kWideLanes = true;
  Status init(const ir::Node&) { return Status::ok(); }
  // The row kernel at the CPU's vector width (an ordered-compare select: simd/kernels_impl.h); exact,
  // so operator() gives its bits without apply_row1.
  void row(const float* x, float* y, int64_t n) const { simd::relu(x, y, n); }
  template <typename V>
  V lanes(V v) const {
    return v <= V{} ? V{} : v;
  }
  template <typename C>
  C operator()(C x) const {
    return x <= C(0) ? C(0) : x;  // NaN passes; -0 gives +0
  }
};
struct LeakyReluOp {
  static constexpr bool kWideLanes = true;
  float alpha = 0.01f;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", 0.01f);
    return Status::ok();
  }
  template <typename V>
  V lanes(V v) const {
    return v >= V{} ? v : static_cast<lane_t<V>>(alpha) * v;
  }
  template <typename C>
  C operator()(C x) const {
    return x >= C(0) ? x : C(alpha) * x;  // NaN: alpha * NaN
  }
};
struct SigmoidOp {
  Status init(const ir::Node&) { return Status::ok(); }
  void row(const float* x, float* y, int64_t n) const { simd::sigmoid(x, y, n); }
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) return apply_row1(*this, x);
    else return sigmoid(x);
  }
};
struct TanhOp {
  Status init(const ir::Node&) { return Status::ok(); }
  void row(const float* x, float* y, int64_t n) const { simd::tanh(x, y, n); }
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) return apply_row1(*this, x);
    else return std::tanh(x);
  }
};
struct HardSigmoidOp {
  static constexpr bool kWideLanes = true;
  float alpha = 0.2f, beta = 0.5f;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", alpha);
    beta = node.attr_float("beta", beta);
    return Status::ok();
  }
  template <typename V>
  V lanes(V v) const {
    using T = lane_t<V>;
    const V one = V{} + T(1);
    return clamp_above(clamp_below(static_cast<T>(alpha) * v + static_cast<T>(beta), V{}), one);
  }
  template <typename C>
  C operator()(C x) const {
    return clamp_above(clamp_below(C(alpha) * x + C(beta), C(0)), C(1));
  }
};
struct HardSwishOp {
  static constexpr bool kWideLanes = true;
  Status init(const ir::Node&) { return Status::ok(); }
  template <typename V>
  V lanes(V v) const {
    using T = lane_t<V>;
    const V one = V{} + T(1);
    return v * clamp_above(clamp_below(static_cast<T>(kAlpha) * v + T(0.5), V{}), one);
  }
  template <typename C>
  C operator()(C x) const {
    return x * clamp_above(clamp_below(C(kAlpha) * x + C(0.5), C(0)), C(1));
  }
  // ONNX's alpha, 1/6 rounded to the compute type: alpha * x + beta as the operator's definition (and
  // onnx.reference) writes it, the bits of Mul(x, HardSigmoid(x, 1/6, 0.5)) as well.
  static constexpr double kAlpha = 1.0 / 6.0;
};
struct GeluOp {
  bool tanh_approx = false;
  Status init(const ir::Node& node) {
    const std::string a = node.attr_string("approximate", "none");
    if (a != "none" && a != "tanh")
      return invalid_argument("attribute 'approximate' must be \"none\" or \"tanh\", got \"" + a + "\"");
    tanh_approx = a == "tanh";
    return Status::ok();
  }
  void row(const float* x, float* y, int64_t n) const {
    if (tanh_approx) simd::gelu_tanh(x, y, n);
    else simd::gelu(x, y, n);
  }
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) return apply_row1(*this, x);
    if (tanh_approx) {
      const C k = C(0.7978845608028654);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
  }
};
struct SwishOp {
  float alpha = 1.f;
  Status init(const ir::Node& node) {
    alpha = node.attr_float("alpha", 1.f);
    return Status::ok();
  }
  void row(const float* x, float* y, int64_t n) const { simd::swish(x, y, n, alpha); }
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) return apply_row1(*this, x);
    else return x * sigmoid(C(alpha) * x);
  }
};
// Clip with float bounds: the same comparisons as the Clip kernel (a NaN x passes through; a NaN
// bound makes every output NaN, as numpy's clip does).
struct ClipOp {
  static constexpr bool kWideLanes = true;
  float lo = -INFINITY, hi = INFINITY;
  bool nan_bound() const { return lo != lo || hi != hi; }
  template <typename V>
  V lanes(V v) const {
    using T = lane_t<V>;
    if (nan_bound()) [[unlikely]]
      return V{} + (static_cast<T>(lo) + static_cast<T>(hi));
    return clamp_above(clamp_below(v, V{} + static_cast<T>(lo)), V{} + static_cast<T>(hi));
  }
  template <typename C>
  C operator()(C x) const {
    if (nan_bound()) [[unlikely]]
      return C(lo) + C(hi);
    return clamp_above(clamp_below(x, C(lo)), C(hi));
  }
};

// An activation, then a clamp: the fused ops' `activation_clamp` attribute ([lo, hi]), what a Max / Min
// of a constant or a Clip after the activation computes (openWakeWord's Max(LeakyRelu(x), -0.4)).
// Lane form only, so it exists for the activations that have one (FusedActivation::make).
template <typename F>
struct ClampedOp {
  static constexpr bool kWideLanes = true;
  F f;
  ClipOp clamp;
  template <typename V>
  V lanes(V v) const {
    return clamp.lanes(f.lanes(v));
  }
  template <typename C>
  C operator()(C x) const {
    return clamp(f(x));
  }
};

// An activation, then an affine map: the fused ops' `activation_affine` attribute ([scale, shift]),
// what Add(Mul(act, scale), shift) of scalar constants computes (PP-LCNetV3's learnable affine block
// after every HardSwish of PP-OCRv4's detector and recognizer). The product and the sum are each
// rounded, as the two ONNX ops round them (the ISA files build with -ffp-contract=off, the others
// for a base ISA without FMA). A Mul alone is shift -0 (x + -0 is x, -0 included), an Add alone scale 1.
// Lane form only, like ClampedOp.
template <typename F>
struct AffineOp {
  static constexpr bool kWideLanes = true;
  F f;
  float scale = 1.f, shift = -0.f;
  template <typename V>
  V lanes(V v) const {
    using T = lane_t<V>;
    return f.lanes(v) * static_cast<T>(scale) + static_cast<T>(shift);
  }
  template <typename C>
  C operator()(C x) const {
    return f(x) * C(scale) + C(shift);
  }
};

// The functors wide_lane_row (float_row.h) is instantiated for (lane_rows.cc, lane_rows_*.cc): those
// declaring kWideLanes.
#define SDX_WIDE_LANE_FUNCTORS(X)                                                                        \
  X(IdentityActivation) X(ReluOp) X(LeakyReluOp) X(HardSigmoidOp) X(HardSwishOp) X(ClipOp) X(ClampedOp<ReluOp>) \
  X(ClampedOp<LeakyReluOp>) X(AffineOp<HardSwishOp>) X(AffineOp<ReluOp>)

// y[j] = f(y[j] + b[j * b_step]) for j < n (b_step 0: one bias for the row; b null: f(y[j])), for
// float or double. Functors with a lane form (no activation, Relu, LeakyRelu, Clip, HardSigmoid,
// HardSwish; float_row.h) run on float vectors of the CPU's width (wide_lane_row) or, at the scalar
// level and for double, on 16-byte vectors (GCC/Clang vector extensions, plain SSE2), with the
// same comparisons and arithmetic per lane as the scalar functors, so the bits are the same (NaN
// included: a lane compare is false for NaN, so the select keeps x); the scalar functors compile to
// a branch per element, which mispredicts on signed data. Float Relu without a bias runs its row
// kernel (the CPU's full vector width: oneDNN's output pieces, a pass of their own). Float
// activations with a row form (Sigmoid, Tanh, Gelu, Swish) add the bias, then run the row on the
// vector kernels: the bits of Add followed by the activation.
template <typename T, typename F>
void epilogue_row(const F& f, T* y, const T* b, int64_t n, int64_t b_step = 1) {
  if constexpr (std::is_same_v<T, float> && HasFloatRow<F> && HasLanes<F>) {
    if (!b) {  // Relu: the row kernel at the CPU's width; with a bias, the lanes below add it in the same pass
      f.row(y, y, n);
      return;
    }
  } else if constexpr (std::is_same_v<T, float> && HasFloatRow<F>) {
    if (b && b_step == 0) {
      simd::binary_vs(simd::BinaryOp::kAdd, y, b[0], y, n);
    } else if (b && b_step == 1) {
      simd::binary_vv(simd::BinaryOp::kAdd, y, b, y, n);
    } else if (b) {
      for (int64_t j = 0; j < n; ++j) y[j] += b[j * b_step];
    }
    f.row(y, y, n);
    return;
  }
  if constexpr (std::is_same_v<T, float> && HasWideLanes<F>) {
    if (wide_lane_row(f, y, y, n, b, b_step)) return;
  }
  int64_t j = 0;
  if constexpr (HasLanes<F> && std::is_floating_point_v<T>) {
    typedef T V __attribute__((vector_size(16)));
    constexpr int64_t L = static_cast<int64_t>(16 / sizeof(T));
    for (; j + L <= n; j += L) {
      V v;
      std::memcpy(&v, y + j, sizeof(V));
      if (b && b_step == 0) {
        v = v + b[0];
      } else if (b) {
        V bv;
        std::memcpy(&bv, b + j, sizeof(V));
        v = v + bv;
      }
      v = f.lanes(v);
      std::memcpy(y + j, &v, sizeof(V));
    }
  }
  if (b) {
    for (; j < n; ++j) y[j] = f(y[j] + b[j * b_step]);
  } else {
    for (; j < n; ++j) y[j] = f(y[j]);
  }
}

class FusedActivation {
 public:
  using Kind = ir::ActivationKind;

  // Reads `activation`, `activation_params`, `activation_clamp` and `activation_affine`; unknown
  // names, wrong parameter counts, and a clamp or an affine map after an activation without that form
  // fail.
  static Result<FusedActivation> from_node(const ir::Node& node) {
    return make(node.attr_string("activation", "none"), node.attr_floats("activation_params"),
                node.attr_floats("activation_clamp"), node.attr_floats("activation_affine"));
  }
  // The names, their parameter counts and defaults: ir/activation_defs.inc. clamp: empty, or [lo, hi]
  // applied after the activation (relu and leaky_relu only). affine: empty, or [scale, shift] applied
  // after it (hard_swish and relu only, not with a clamp).
  static Result<FusedActivation> make(const std::string& name, const std::vector<float>& params,
                                      const std::vector<float>& clamp = {}, const std::vector<float>& affine = {}) {
    FusedActivation a;
    const ir::ActivationInfo* info = name == "none" ? nullptr : ir::find_activation(name);
    if (name != "none" && !info) return invalid_argument("unknown activation '" + name + "'");
    if (!affine.empty()) {
      if (affine.size() != 2)
        return invalid_argument("activation_affine takes 2 values [scale, shift], got " + std::to_string(affine.size()));
      if (!info || (info->kind != Kind::kHardSwish && info->kind != Kind::kRelu) || !clamp.empty())
        return invalid_argument("activation_affine follows only activation 'hard_swish' or 'relu' without a clamp, not '" +
                                name + "'" + (clamp.empty() ? "" : " with activation_clamp"));
      a.affine_ = true;
      a.affine_scale_ = affine[0];
      a.affine_shift_ = affine[1];
    }
    if (!clamp.empty()) {
      if (clamp.size() != 2) return invalid_argument("activation_clamp takes 2 values [lo, hi], got " + std::to_string(clamp.size()));
      if (!info || (info->kind != Kind::kRelu && info->kind != Kind::kLeakyRelu))
        return invalid_argument("activation_clamp follows only activation 'relu' or 'leaky_relu', not '" + name + "'");
      a.clamped_ = true;
      a.clamp_.lo = clamp[0];
      a.clamp_.hi = clamp[1];
    }
    const size_t lo = info ? static_cast<size_t>(info->min_params) : 0, hi = info ? static_cast<size_t>(info->max_params) : 0;
    if (params.size() < lo || params.size() > hi)
      return invalid_argument("activation '" + name + "' takes " + std::to_string(lo) + ".." + std::to_string(hi) +
                              " activation_params, got " + std::to_string(params.size()));
    if (!info) return a;
    auto param = [&](size_t i) { return i < params.size() ? params[i] : info->params[i].default_value; };
    a.kind_ = info->kind;
    switch (a.kind_) {
      case Kind::kLeakyRelu: a.leaky_.alpha = param(0); break;
      case Kind::kGelu:
      case Kind::kGeluTanh: a.gelu_.tanh_approx = a.kind_ == Kind::kGeluTanh; break;
      case Kind::kSilu: a.swish_.alpha = param(0); break;
      case Kind::kHardSigmoid:
        a.hard_sigmoid_.alpha = param(0);
        a.hard_sigmoid_.beta = param(1);
        break;
      case Kind::kClip:
        a.clip_.lo = param(0);
        a.clip_.hi = param(1);
        break;
      default: break;  // no parameters
    }
    return a;
  }

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }

  // Calls f(functor) with the concrete functor of this activation; returns what f returns.
  template <typename F>
  decltype(auto) visit(F&& f) const {
    if (affine_) [[unlikely]] {
      if (kind_ == Kind::kHardSwish) return f(AffineOp<HardSwishOp>{{}, affine_scale_, affine_shift_});
      return f(AffineOp<ReluOp>{{}, affine_scale_, affine_shift_});  // make() allows no other
    }
    if (clamped_) [[unlikely]] {
      if (kind_ == Kind::kRelu) return f(ClampedOp<ReluOp>{{}, clamp_});
      return f(ClampedOp<LeakyReluOp>{leaky_, clamp_});  // make() allows no other
    }
    switch (kind_) {
      case Kind::kRelu:
        return f(ReluOp{});
      case Kind::kLeakyRelu:
        return f(leaky_);
      case Kind::kSigmoid:
        return f(SigmoidOp{});
      case Kind::kTanh:
        return f(TanhOp{});
      case Kind::kGelu:
      case Kind::kGeluTanh:
        return f(gelu_);
      case Kind::kSilu:
        return f(swish_);
      case Kind::kHardSigmoid:
        return f(hard_sigmoid_);
      case Kind::kHardSwish:
        return f(HardSwishOp{});
      case Kind::kClip:
        return f(clip_);
      case Kind::kNone:
        break;
    }
    return f(IdentityActivation{});
  }

 private:
  Kind kind_ = Kind::kNone;
  bool clamped_ = false;  // clamp_ applies after the activation
  bool affine_ = false;   // y * affine_scale_ + affine_shift_ after the activation
  float affine_scale_ = 1.f, affine_shift_ = -0.f;
  ClipOp clamp_;
  LeakyReluOp leaky_;
  GeluOp gelu_;
  SwishOp swish_;
  HardSigmoidOp hard_sigmoid_;
  ClipOp clip_;
};

}  // namespace sdx::cpu
