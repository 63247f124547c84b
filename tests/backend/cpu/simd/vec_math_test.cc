// Accuracy of the vector math (simd/vec_math.h through simd/vector_ops.h) at every instruction-set
// level this CPU has, against double-precision references over the whole float range (a strided
// sweep of all bit patterns, plus tails, infinities and NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/simd/isa.h"
#include "backend/cpu/simd/vector_ops.h"

namespace sdx::cpu::simd {
namespace {

std::vector<Isa> levels() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa())) out.push_back(isa);
  return out;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Every `stride`-th bit pattern (both signs) plus values that matter for the polynomials' edges.
std::vector<float> sweep(uint32_t stride) {
  std::vector<float> xs;
  for (uint64_t u = 0; u < 0x7f800000u; u += stride) {
    xs.push_back(from_bits(static_cast<uint32_t>(u)));
    xs.push_back(-from_bits(static_cast<uint32_t>(u)));
  }
  for (float edge : {0.625f, 0.875f, 3.92f, 9.1f, 88.7228317f, 88.72283935546875f, 88.8f, -87.3f, -103.9f, -104.f,
                     -150.f, 1e-30f, 1e-45f}) {
    float v = edge;
    for (int k = 0; k < 64; ++k) {
      xs.push_back(v);
      xs.push_back(-v);
      v = std::nextafter(v, 0.f);
    }
    v = edge;
    for (int k = 0; k < 64; ++k) {
      xs.push_back(v);
      v = std::nextafter(v, 1e30f);
    }
  }
  return xs;
}

// Error of y against the exact value r, in units of the last place of r rounded to float.
double ulp_error(float y, double r) {
  if (std::isnan(r)) return std::isnan(y) ? 0 : 1e9;
  if (std::isinf(r) || std::fabs(r) > std::numeric_limits<float>::max() * (1 + 0x1p-25))
    return y == static_cast<float>(r) ? 0 : 1e9;
  if (std::isinf(y)) return 1e9;
  const double ar = std::fabs(r);
  const double ulp = ar < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(ar) - 23);
  return std::fabs(static_cast<double>(y) - r) / ulp;
}

struct Case {
  std::string name;
  std::function<void(const float*, float*, int64_t)> f;
  std::function<double(double)> ref;
  double max_ulp;
};

std::vector<Case> cases() {
  return {
      {"exp", [](const float* x, float* y, int64_t n) { exp(x, y, n); }, [](double v) { return std::exp(v); }, 1.0},
      {"erf", [](const float* x, float* y, int64_t n) { erf(x, y, n); }, [](double v) { return std::erf(v); }, 1.5},
      {"tanh", [](const float* x, float* y, int64_t n) { tanh(x, y, n); }, [](double v) { return std::tanh(v); }, 1.5},
      {"sigmoid", [](const float* x, float* y, int64_t n) { sigmoid(x, y, n); },
       [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 3.0},
  };
}

TEST(SimdVecMath, MaxUlpErrorOverFloatRange) {
  const std::vector<float> xs = sweep(997);
  std::vector<float> ys(xs.size());
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    for (const Case& c : cases()) {
      c.f(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
      double worst = 0;
      float worst_x = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double e = ulp_error(ys[i], c.ref(static_cast<double>(xs[i])));
        if (e > worst) worst = e, worst_x = xs[i];
      }
      std::printf("  [%s] %-8s max error %.3f ulp at x = %.9g\n", isa_name(isa), c.name.c_str(), worst, worst_x);
      EXPECT_LE(worst, c.max_ulp) << isa_name(isa) << " " << c.name << " at x = " << worst_x;
    }
  }
}

TEST(SimdVecMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs = {inf, -inf, nan, 0.f, -0.f, 100.f, -100.f, 89.f, -200.f};
  std::vector<float> y(xs.size());
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    SCOPED_TRACE(isa_name(isa));
    exp(xs.data(), y.data(), 9);
    EXPECT_EQ(y[0], inf);
    EXPECT_EQ(y[1], 0.f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 1.f);
    EXPECT_EQ(y[4], 1.f);
    EXPECT_EQ(y[5], inf);
    EXPECT_EQ(y[6], static_cast<float>(std::exp(-100.0)));  // a denormal
    EXPECT_EQ(y[7], inf);
    EXPECT_EQ(y[8], 0.f);
    erf(xs.data(), y.data(), 9);
    EXPECT_EQ(y[0], 1.f);
    EXPECT_EQ(y[1], -1.f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 0.f);
    EXPECT_TRUE(std::signbit(y[4]));
    EXPECT_EQ(y[5], 1.f);
    EXPECT_EQ(y[6], -1.f);
    tanh(xs.data(), y.data(), 9);
    EXPECT_EQ(y[0], 1.f);
    EXPECT_EQ(y[1], -1.f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 0.f);
    EXPECT_TRUE(std::signbit(y[4]));
    sigmoid(xs.data(), y.data(), 9);
    EXPECT_EQ(y[0], 1.f);
    EXPECT_EQ(y[1], 0.f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 0.5f);
    EXPECT_EQ(y[5], 1.f);
    EXPECT_GT(y[6], 0.f);  // exp(-100): a denormal, not flushed
    gelu(xs.data(), y.data(), 9);
    EXPECT_EQ(y[0], inf);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 0.f);
    EXPECT_EQ(y[5], 100.f);
    EXPECT_EQ(y[6], -0.f);
  }
}

// Gelu / Gelu-tanh / Swish against the formulas in double. The float formulas lose the relative
// accuracy of 1 + erf (1 + tanh) where it is tiny (x << 0), as the scalar formula always did, so
// the bound has an absolute part of about one float ulp of 1 times |x| / 2.
TEST(SimdVecMath, GeluAndSwishFormulas) {
  std::vector<float> xs;
  for (float v = -12.f; v <= 12.f; v += 0.00137f) xs.push_back(v);
  std::vector<float> y(xs.size());
  const int64_t n = static_cast<int64_t>(xs.size());
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    SCOPED_TRACE(isa_name(isa));
    auto check = [&](const char* what, const std::function<double(double)>& ref) {
      double worst = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double x = xs[i], r = ref(x);
        const double bound = 4 * std::ldexp(1.0, std::ilogb(std::fabs(r) + 1e-300) - 23) + std::fabs(x) * 0x1p-23;
        worst = std::max(worst, std::fabs(y[i] - r) / bound);
        ASSERT_LE(std::fabs(y[i] - r), bound) << what << " x = " << x;
      }
      std::printf("  [%s] %-10s worst error %.3f of the bound\n", isa_name(isa), what, worst);
    };
    gelu(xs.data(), y.data(), n);
    check("gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
    gelu_tanh(xs.data(), y.data(), n);
    check("gelu_tanh", [](double x) {
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    });
    swish(xs.data(), y.data(), n, 1.7f);
    check("swish", [](double x) { return x / (1 + std::exp(-static_cast<double>(1.7f) * x)); });
  }
}

// Every element goes through the same vector code wherever a range starts or ends, so computing
// a row in pieces (as parallel chunks do) gives the same bits as computing it whole.
TEST(SimdVecMath, SameBitsWhereverTheRangeIsCut) {
  std::vector<float> xs;
  for (int i = 0; i < 1003; ++i) xs.push_back(std::sin(i * 0.37f) * (i % 13 == 0 ? 40.f : 3.f));
  const int64_t n = static_cast<int64_t>(xs.size());
  using Fn = void (*)(const float*, float*, int64_t);
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    for (Fn f : {Fn(&exp), Fn(&erf), Fn(&tanh), Fn(&sigmoid), Fn(&gelu), Fn(&gelu_tanh)}) {
      std::vector<float> whole(xs.size()), pieces(xs.size());
      f(xs.data(), whole.data(), n);
      int64_t at = 0;
      for (int64_t len : {1, 7, 15, 17, 33, 3, 1000}) {
        const int64_t m = std::min(len, n - at);
        if (m <= 0) break;
        f(xs.data() + at, pieces.data() + at, m);
        at += m;
      }
      ASSERT_EQ(at, n);
      ASSERT_EQ(std::memcmp(whole.data(), pieces.data(), xs.size() * 4), 0) << isa_name(isa);
    }
  }
}

TEST(SimdIsa, ForceClampsToDetectedAndRestores) {
  const Isa before = active_isa();
  {
    ScopedIsa scope(Isa::kScalar);
    EXPECT_EQ(active_isa(), Isa::kScalar);
    force_isa(Isa::kAvx512);
    EXPECT_EQ(active_isa(), detected_isa());  // never above what the CPU has
  }
  EXPECT_EQ(active_isa(), before);
}

}  // namespace
}  // namespace sdx::cpu::simd
