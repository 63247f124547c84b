// The vectorized, multi-threaded forms of the element-wise kernels (elementwise.h, activation.h):
// every instruction-set level against double-precision references at odd sizes, the same bits
// at 1 and 2 threads, bound forms equal to run(), and fused epilogues equal to the unfused ops.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/simd/isa.h"
#include "bound_test_util.h"
#include "vectorized_test_util.h"

namespace sdx {
namespace {

using namespace sdx::test;
using cpu::simd::Isa;
using cpu::simd::ScopedIsa;

struct UnaryCase {
  std::string op;
  std::vector<ir::Attribute> attrs;
  std::function<double(double)> ref;
  double ulps;
  double abs_per_x;  // absolute error allowed per |x| (cancellation inherent to the float formula)
};

std::vector<UnaryCase> unary_cases() {
  const double s2 = std::sqrt(2.0), k = std::sqrt(2 / M_PI);
  return {
      {"Exp", {}, [](double x) { return std::exp(x); }, 1, 0},
      {"Erf", {}, [](double x) { return std::erf(x); }, 2, 0},
      {"Tanh", {}, [](double x) { return std::tanh(x); }, 2, 0},
      {"Sigmoid", {}, [](double x) { return 1 / (1 + std::exp(-x)); }, 3, 0},
      {"Gelu", {}, [s2](double x) { return 0.5 * x * (1 + std::erf(x / s2)); }, 4, 0x1p-23},
      {"Gelu", {attr_s("approximate", "tanh")},
       [k](double x) { return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x))); }, 4, 0x1p-23},
      {"Swish", {attr_f("alpha", 0.75f)}, [](double x) { return x / (1 + std::exp(-0.75 * x)); }, 4, 0x1p-23},
  };
}

TEST(ElementwiseVectorized, UnaryMatchesReferenceAtEveryLevelAndOddSizes) {
  for (Isa isa : isa_levels()) {
    ScopedIsa scope(isa);
    for (const UnaryCase& c : unary_cases()) {
      for (int64_t n : odd_sizes()) {
        SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + " " + c.op + " n=" + std::to_string(n));
        std::vector<float> x = random_floats(n, static_cast<uint32_t>(n));
        if (c.op == "Exp")
          for (float& v : x) v = std::fmax(std::fmin(v, 80.f), -100.f);
        const int opset = c.op == "Swish" ? 24 : 20;
        auto y = run_node(c.op, {f32(x, {n})}, c.attrs, opset);
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        std::vector<double> want;
        for (float v : x) want.push_back(c.ref(v));
        const std::vector<float> got = values<float>((*y)[0]);
        for (size_t i = 0; i < got.size(); ++i) {
          const double ulp = std::ldexp(1.0, std::max(std::ilogb(std::fabs(want[i]) + 1e-300), -126) - 23);
          ASSERT_LE(std::fabs(got[i] - want[i]), c.ulps * ulp + c.abs_per_x * std::fabs(x[i]))
              << "x = " << x[i] << ": got " << got[i] << ", want " << want[i];
        }
      }
    }
  }
}

TEST(ElementwiseVectorized, UnarySameBitsAtOneAndTwoThreadsAndBound) {
  const int64_t n = (1 << 17) + 3;
  const Tensor x = f32(random_floats(n, 7), {n});
  for (Isa isa : isa_levels()) {
    ScopedIsa scope(isa);
    SCOPED_TRACE(cpu::simd::isa_name(isa));
    for (const UnaryCase& c : unary_cases()) {
      const NodeSpec spec{.op = c.op, .opset = c.op == "Swish" ? 24 : 20, .inputs = {x}, .attrs = c.attrs};
      expect_same_bits_at_1_and_2_threads(spec);
      expect_bound_matches(spec);
    }
    expect_same_bits_at_1_and_2_threads({.op = "Relu", .inputs = {x}});
  }
}

TEST(ElementwiseVectorized, BinaryBroadcastLayoutsMatchScalarAndThreads) {
  struct Layout {
    std::vector<int64_t> a, b;
  };
  // Same shape, scalar operand either side, row broadcast [M, N] op [N], column broadcast
  // [M, N] op [M, 1], and a middle broadcast; odd sizes so the vector loops have tails.
  const std::vector<Layout> layouts = {{{1003}, {1003}}, {{33, 17}, {1}},   {{1}, {7, 15}},
                                       {{17, 33}, {33}}, {{15, 7}, {15, 1}}, {{3, 5, 17}, {3, 1, 17}},
                                       {{5, 3}, {5, 1}},   {{4, 1, 3}, {1, 5, 3}}};
  const std::vector<std::pair<std::string, std::function<float(float, float)>>> ops = {
      {"Add", [](float p, float q) { return p + q; }},
      {"Sub", [](float p, float q) { return p - q; }},
      {"Mul", [](float p, float q) { return p * q; }},
      {"Div", [](float p, float q) { return p / q; }}};
  for (Isa isa : isa_levels()) {
    ScopedIsa scope(isa);
    for (const Layout& l : layouts) {
      const Shape sa(l.a), sb(l.b);
      const std::vector<float> va = random_floats(sa.numel(), 3), vb = random_floats(sb.numel(), 4);
      const Tensor a = f32(va, l.a), b = f32(vb, l.b);
      for (const auto& [op, f] : ops) {
        SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + " " + op + " " + sa.to_string() + " " + sb.to_string());
        auto y = run_single(op, {a, b});
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        // numpy broadcasting by hand: exact IEEE ops, so bitwise equal.
        const Shape& so = y->shape();
        const int r = so.rank();
        std::vector<float> got = values<float>(*y);
        for (int64_t o = 0; o < so.numel(); ++o) {
          int64_t rest = o, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
          for (int d = r - 1; d >= 0; --d) {
            const int64_t i = rest % so[d];
            rest /= so[d];
            const int da = d - (r - sa.rank()), db = d - (r - sb.rank());
            if (da >= 0) {
              if (sa[da] != 1) ia += i * stride_a;
              stride_a *= sa[da];
            }
            if (db >= 0) {
              if (sb[db] != 1) ib += i * stride_b;
              stride_b *= sb[db];
            }
          }
          const float want = f(va[static_cast<size_t>(ia)], vb[static_cast<size_t>(ib)]);
          ASSERT_EQ(std::memcmp(&got[static_cast<size_t>(o)], &want, 4), 0) << "element " << o;
        }
        expect_bound_matches({.op = op, .inputs = {a, b}});
      }
    }
    // Large enough to split over two threads, in every layout.
    const Tensor big = f32(random_floats(512 * 257, 5), {512, 257});
    for (const Tensor& other : {f32(random_floats(512 * 257, 6), {512, 257}), f32({2.5f}, {1}),
                                f32(random_floats(257, 8), {257}), f32(random_floats(512, 9), {512, 1})})
      expect_same_bits_at_1_and_2_threads({.op = "Add", .inputs = {big, other}});
  }
}

// sdx.Linear-style epilogues (activation.h epilogue_row) give the bits of Add followed by the
// element-wise activation kernel.
TEST(ElementwiseVectorized, EpilogueRowMatchesUnfusedAddAndActivation) {
  for (Isa isa : isa_levels()) {
    ScopedIsa scope(isa);
    for (int64_t n : odd_sizes()) {
      SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + " n=" + std::to_string(n));
      const std::vector<float> x = random_floats(n, 11), b = random_floats(n, 12, 0.5f);
      for (const char* act : {"gelu", "gelu_tanh", "sigmoid", "tanh", "silu"}) {
        auto fa = cpu::FusedActivation::make(act, {});
        ASSERT_TRUE(fa.is_ok());
        std::vector<float> fused = x, fused_scalar_bias = x;
        fa->visit([&](auto f) {
          cpu::epilogue_row(f, fused.data(), b.data(), n);
          cpu::epilogue_row(f, fused_scalar_bias.data(), b.data(), n, /*b_step=*/0);
        });
        auto sum = run_single("Add", {f32(x, {n}), f32(b, {n})});
        auto sum0 = run_single("Add", {f32(x, {n}), f32({b[0]}, {1})});
        ASSERT_TRUE(sum.is_ok() && sum0.is_ok());
        const std::string a = act;
        const std::string op = a == "gelu" || a == "gelu_tanh" ? "Gelu" : a == "sigmoid" ? "Sigmoid" : a == "tanh" ? "Tanh" : "Swish";
        std::vector<ir::Attribute> attrs;
        if (a == "gelu_tanh") attrs.push_back(attr_s("approximate", "tanh"));
        const int opset = op == "Swish" ? 24 : 20;
        auto unfused = run_single(op, {*sum}, attrs, opset);
        auto unfused0 = run_single(op, {*sum0}, attrs, opset);
        ASSERT_TRUE(unfused.is_ok() && unfused0.is_ok()) << unfused.status().to_string();
        EXPECT_EQ(std::memcmp(fused.data(), unfused->data<float>(), static_cast<size_t>(n) * 4), 0) << act;
        EXPECT_EQ(std::memcmp(fused_scalar_bias.data(), unfused0->data<float>(), static_cast<size_t>(n) * 4), 0) << act;
        // One element at a time (the functor's float operator()) gives the same bits too.
        fa->visit([&](auto f) {
          for (int64_t i = 0; i < n; ++i) {
            const float one = f(sum->data<float>()[i]);
            ASSERT_EQ(std::memcmp(&one, unfused->data<float>() + i, 4), 0) << act << " element " << i;
          }
        });
      }
    }
  }
}

}  // namespace
}  // namespace sdx
