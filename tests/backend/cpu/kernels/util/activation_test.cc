// NaN, infinities and signed zeros through the shared activation functors (activation.h): every
// epilogue activation maps NaN to NaN (as the ONNX reference does), as a scalar functor and on every
// lane and tail position of epilogue_row's vector loop, with and without a bias, for float and
// double; Relu's zeros; Clip with a NaN bound.
#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/simd/isa.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace sdx::cpu {
namespace {

struct Named {
  std::string name;
  std::vector<float> params;
};

// Every activation FusedActivation parses, with parameters that exercise each branch.
std::vector<Named> all_activations() {
  return {{"none", {}},
          {"relu", {}},
          {"leaky_relu", {0.1f}},
          {"leaky_relu", {0.f}},
          {"sigmoid", {}},
          {"tanh", {}},
          {"gelu", {}},
          {"gelu_tanh", {}},
          {"silu", {}},
          {"silu", {1.5f}},
          {"hard_sigmoid", {0.25f, 0.4f}},
          {"hard_swish", {}},
          {"clip", {0.f, 6.f}},
          {"clip", {-1.f, 0.5f}}};
}

FusedActivation make_act(const Named& a) {
  auto r = FusedActivation::make(a.name, a.params);
  EXPECT_TRUE(r.is_ok()) << a.name << ": " << r.status().to_string();
  return r.value();
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename T>
void scalar_functors_propagate_nan() {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (const Named& a : all_activations()) {
    SCOPED_TRACE(a.name);
    make_act(a).visit([&](auto f) {
      EXPECT_TRUE(std::isnan(f(nan)));
      EXPECT_TRUE(std::isnan(f(-nan)));
      return 0;
    });
  }
}

TEST(Activation, ScalarFunctorsPropagateNaN) {
  scalar_functors_propagate_nan<float>();
  scalar_functors_propagate_nan<double>();
}

TEST(Activation, ReluAndClampsOnZerosAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const ReluOp relu;
  EXPECT_TRUE(same_bits(relu(-0.f), 0.f));  // +0, as numpy's maximum(x, 0) and oneDNN give
  EXPECT_TRUE(same_bits(relu(-1.f), 0.f));
  EXPECT_TRUE(same_bits(relu(-inf), 0.f));
  EXPECT_EQ(relu(inf), inf);
  EXPECT_EQ(relu(2.5f), 2.5f);
  EXPECT_EQ(relu(int32_t{-3}), 0);
  EXPECT_EQ(relu(int32_t{3}), 3);
  EXPECT_EQ(relu(std::numeric_limits<float>::denorm_min()), std::numeric_limits<float>::denorm_min());
  HardSigmoidOp hs;
  EXPECT_EQ(hs(inf), 1.f);
  EXPECT_EQ(hs(-inf), 0.f);
  EXPECT_EQ(hs(0.f), 0.5f);
  const HardSwishOp hw;
  EXPECT_EQ(hw(inf), inf);
  EXPECT_TRUE(std::isnan(hw(-inf)));  // -inf * 0, as the ONNX function body computes it
  EXPECT_EQ(hw(-4.f), -0.f);
}

// f over n values with NaN (of the given sign) at position p, through epilogue_row, against the scalar
// functor element by element: the same bits everywhere (so NaN exactly at p).
template <typename T, typename F>
void check_row(const F& f, int64_t n, int64_t p, int bias_mode, bool nan_in_bias) {
  std::vector<T> x(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x[static_cast<size_t>(i)] = static_cast<T>(std::sin(0.9 * static_cast<double>(i) + 0.2) * 4);
    b[static_cast<size_t>(i)] = static_cast<T>(0.25 * static_cast<double>(i % 5) - 0.5);
  }
  const T nan = std::numeric_limits<T>::quiet_NaN();
  (nan_in_bias ? b : x)[static_cast<size_t>(p)] = (p % 2) ? -nan : nan;
  const T* pb = bias_mode == 0 ? nullptr : b.data() + (bias_mode == 1 && nan_in_bias ? p : 0);
  const int64_t b_step = bias_mode == 1 ? 0 : 1;
  std::vector<T> y = x;
  epilogue_row(f, y.data(), pb, n, b_step);
  for (int64_t j = 0; j < n; ++j) {
    const T in = x[static_cast<size_t>(j)];
    const T want = pb ? f(static_cast<T>(in + pb[j * b_step])) : f(in);
    const T got = y[static_cast<size_t>(j)];
    const bool nan_expected = bias_mode == 1 && nan_in_bias ? true : j == p;
    ASSERT_EQ(std::isnan(got), nan_expected) << "n " << n << " NaN at " << p << " element " << j << " got " << got;
    if (!std::isnan(want)) {
      ASSERT_TRUE(same_bits(got, want)) << "n " << n << " NaN at " << p << " element " << j << ": got " << got
                                        << ", want " << want;
    } else {
      ASSERT_TRUE(std::isnan(got));
    }
  }
}

template <typename T>
void epilogue_rows_keep_nan() {
  for (const Named& a : all_activations()) {
    SCOPED_TRACE(a.name + (a.params.empty() ? "" : " " + std::to_string(a.params[0])));
    make_act(a).visit([&](auto f) {
      for (int64_t n = 1; n <= 19; ++n)
        for (int64_t p = 0; p < n; ++p)
          for (int bias_mode : {0, 1, 2})  // none, one for the row (b_step 0), per element
            for (bool in_bias : {false, true}) {
              if (bias_mode == 0 && in_bias) continue;
              check_row<T>(f, n, p, bias_mode, in_bias);
            }
      return 0;
    });
  }
}

TEST(Activation, EpilogueRowKeepsNaNAtEveryLaneAndTail) {
  // Every level this CPU has: float rows take the level's full width (wide_lane_row), so 16 lanes on
  // AVX-512, 8 on AVX2, 4 at the scalar level.
  for (simd::Isa isa : {simd::Isa::kScalar, simd::Isa::kAvx2, simd::Isa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(simd::detected_isa())) continue;
    simd::ScopedIsa level(isa);
    SCOPED_TRACE(simd::isa_name(isa));
    epilogue_rows_keep_nan<float>();
    epilogue_rows_keep_nan<double>();
  }
}

// HardSwish is x * max(0, min(1, alpha x + beta)) with ONNX's alpha = 1/6 rounded to the type, as the
// operator's definition and onnx.reference write it: the bits of Mul(x, HardSigmoid(x, 1/6, 0.5)),
// at every level and lane (the unary kernel's rows: unary_map).
TEST(Activation, HardSwishIsXTimesHardSigmoidOfOneSixth) {
  const HardSwishOp hw;
  HardSigmoidOp hs;
  hs.alpha = static_cast<float>(1.0 / 6.0);
  hs.beta = 0.5f;
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 7);
  for (simd::Isa isa : {simd::Isa::kScalar, simd::Isa::kAvx2, simd::Isa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(simd::detected_isa())) continue;
    simd::ScopedIsa level(isa);
    std::vector<float> y = x;
    epilogue_row(hw, y.data(), static_cast<const float*>(nullptr), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(same_bits(y[i], x[i] * hs(x[i]))) << simd::isa_name(isa) << " x " << x[i];
      ASSERT_TRUE(same_bits(hw(x[i]), x[i] * hs(x[i]))) << x[i];
    }
  }
  EXPECT_TRUE(same_bits(hw(1.3), 1.3 * ((1.0 / 6.0) * 1.3 + 0.5)));  // double: alpha in double
}

TEST(Activation, ClipWithNaNBoundGivesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const std::vector<float>& params : {std::vector<float>{nan, 6.f}, std::vector<float>{0.f, nan}}) {
    const FusedActivation act = FusedActivation::make("clip", params).value();
    act.visit([&](auto f) {
      std::vector<float> y = {-2.f, 0.f, 1.f, 3.f, 7.f, 8.f, -1.f, 0.5f, 2.f};
      epilogue_row(f, y.data(), static_cast<const float*>(nullptr), static_cast<int64_t>(y.size()));
      for (float v : y) EXPECT_TRUE(std::isnan(v)) << v;
      EXPECT_TRUE(std::isnan(f(1.0)));
      return 0;
    });
  }
}

}  // namespace
}  // namespace sdx::cpu

namespace sdx::cpu {
namespace {

// FusedActivation takes every name of the activation table with its parameter counts, fills missing
// parameters with the table's defaults, and refuses one parameter too many.
TEST(Activation, FusedActivationTakesEveryRowOfTheTable) {
  for (const ir::ActivationInfo& row : ir::activations()) {
    const std::string name(row.name);
    std::vector<float> defaults;
    for (int i = 0; i < row.max_params; ++i) defaults.push_back(row.params[i].default_value);
    auto full = FusedActivation::make(name, defaults);
    ASSERT_TRUE(full.is_ok()) << name << ": " << full.status().to_string();
    const float x = 0.7f, want = full->visit([&](auto f) { return static_cast<float>(f(x)); });
    for (int n = row.min_params; n <= row.max_params; ++n) {
      auto a = FusedActivation::make(name, std::vector<float>(defaults.begin(), defaults.begin() + n));
      ASSERT_TRUE(a.is_ok()) << name << " with " << n << " params: " << a.status().to_string();
      EXPECT_EQ(a->kind(), row.kind) << name;
      // Missing parameters take the table's defaults.
      EXPECT_EQ(a->visit([&](auto f) { return static_cast<float>(f(x)); }), want) << name << " with " << n << " params";
    }
    EXPECT_FALSE(FusedActivation::make(name, std::vector<float>(static_cast<size_t>(row.max_params) + 1, 0.f)).is_ok())
        << name;
  }
  EXPECT_TRUE(FusedActivation::make("none", {}).is_ok());
  EXPECT_FALSE(FusedActivation::make("none", {1.f}).is_ok());
  // activation_clamp: two bounds, after relu or leaky_relu only.
  EXPECT_FALSE(FusedActivation::make("none", {}, {0.f, 1.f}).is_ok());
  EXPECT_FALSE(FusedActivation::make("tanh", {}, {0.f, 1.f}).is_ok());
  EXPECT_FALSE(FusedActivation::make("relu", {}, {0.f}).is_ok());
  EXPECT_FALSE(FusedActivation::make("swish", {}).is_ok());  // the table's name is "silu"
  // activation_affine: scale and shift, after hard_swish or relu only, not with a clamp.
  EXPECT_TRUE(FusedActivation::make("hard_swish", {}, {}, {2.f, 1.f}).is_ok());
  EXPECT_FALSE(FusedActivation::make("none", {}, {}, {2.f, 1.f}).is_ok());
  EXPECT_FALSE(FusedActivation::make("sigmoid", {}, {}, {2.f, 1.f}).is_ok());
  EXPECT_FALSE(FusedActivation::make("hard_swish", {}, {}, {2.f}).is_ok());
  EXPECT_FALSE(FusedActivation::make("relu", {}, {0.f, 6.f}, {2.f, 1.f}).is_ok());
}

}  // namespace
}  // namespace sdx::cpu

namespace sdx::cpu {
namespace {

// A clamp after LeakyRelu: Clip(LeakyRelu(x)) per element, the same bits in the lane form (every lane
// and tail of epilogue_row, with and without a bias) as in the scalar functor; NaN passes.
TEST(Activation, ClampAfterLeakyReluAtEveryLaneAndTail) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const FusedActivation act = FusedActivation::make("leaky_relu", {0.2f}, {-0.4f, kInf}).value();
  EXPECT_EQ(act.kind(), FusedActivation::Kind::kLeakyRelu);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs = {-5.f, -2.f, -1.f, -0.f, 0.f, 0.5f, 3.f, nan, -kInf, kInf, -2.1f};
  act.visit([&](auto f) {
    EXPECT_EQ(f(-5.f), -0.4f);
    EXPECT_EQ(f(-1.f), -0.2f);
    EXPECT_EQ(f(3.f), 3.f);
    EXPECT_TRUE(std::isnan(f(nan)));
    for (size_t n = 1; n <= xs.size(); ++n) {
      std::vector<float> y(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n)), b(n, 0.25f);
      std::vector<float> yb = y;
      epilogue_row(f, y.data(), static_cast<const float*>(nullptr), static_cast<int64_t>(n));
      epilogue_row(f, yb.data(), b.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const float want = std::max(-0.4f, xs[i] >= 0 ? xs[i] : 0.2f * xs[i]);
        const float want_b = f(xs[i] + 0.25f);
        if (std::isnan(xs[i])) {
          EXPECT_TRUE(std::isnan(y[i]) && std::isnan(yb[i]));
        } else {
          EXPECT_EQ(y[i], want) << i << " of " << n;
          EXPECT_EQ(yb[i], want_b) << i << " of " << n;
        }
      }
    }
    return 0;
  });
}

// An affine map after HardSwish: HardSwish(x) * a + b per element, each rounded, the same bits in
// the lane form (every lane and tail of epilogue_row, with and without a bias) as in the scalar
// functor; NaN passes; a Mul alone (shift -0) keeps a -0.
TEST(Activation, AffineAfterHardSwishAtEveryLaneAndTail) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const FusedActivation act = FusedActivation::make("hard_swish", {}, {}, {1.3f, -0.2f}).value();
  EXPECT_EQ(act.kind(), FusedActivation::Kind::kHardSwish);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs = {-5.f, -2.f, -1.f, -0.f, 0.f, 0.5f, 3.f, nan, -kInf, 7.f, -2.1f, 1.7f, 2.9f,
                                 0.1f, -0.3f, 4.f, 5.5f, -2.9f};
  act.visit([&](auto f) {
    for (size_t n = 1; n <= xs.size(); ++n) {
      std::vector<float> y(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n)), b(n, 0.25f);
      std::vector<float> yb = y;
      epilogue_row(f, y.data(), static_cast<const float*>(nullptr), static_cast<int64_t>(n));
      epilogue_row(f, yb.data(), b.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const volatile float hs = HardSwishOp{}(xs[i]), hsb = HardSwishOp{}(xs[i] + 0.25f);
        const volatile float prod = hs * 1.3f, prodb = hsb * 1.3f;
        if (std::isnan(prod + -0.2f)) {  // NaN, and -inf * 0 in HardSwish(-inf)
          EXPECT_TRUE(std::isnan(y[i]) && std::isnan(yb[i]));
        } else {
          EXPECT_EQ(y[i], prod + -0.2f) << i << " of " << n;
          EXPECT_EQ(yb[i], prodb + -0.2f) << i << " of " << n;
        }
      }
    }
    return 0;
  });
  const FusedActivation mul = FusedActivation::make("relu", {}, {}, {-2.f, -0.f}).value();
  mul.visit([&](auto f) {
    EXPECT_TRUE(std::signbit(f(-1.f)));  // Relu gives +0, times -2 is -0, plus -0 stays -0
    EXPECT_EQ(f(3.f), -6.f);
    return 0;
  });
}

}  // namespace
}  // namespace sdx::cpu
