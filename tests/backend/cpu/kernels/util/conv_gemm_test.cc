// conv_forward (backend/cpu/kernels/util/conv_gemm.h) against a direct double-precision convolution, on
// both of its paths: the blocked im2col product, and the narrow one (at most kSmallMMaxRows output
// positions: the product runs transposed, one dot product per output). Odd channel counts, groups,
// strides, dilations, pads, 1-D and 2-D, pointwise, float and double, the sizes on each side of the
// narrow limit; the narrow path gives the same bits at every pool size.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels/util/conv_gemm.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

struct Case {
  std::string name;
  std::vector<int64_t> x, w;  // X [N, C, spatial...], W [M, C/G, kernel...]
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
};

std::vector<Case> cases() {
  return {
      {"STFT as a strided 1-D conv: 4 positions", {1, 1, 640}, {258, 1, 256}, 1, {128}, {1}, {0, 0}},
      {"1-D k3 over 4 frames, 129 -> 128 channels", {1, 129, 4}, {128, 129, 3}, 1, {1}, {1}, {1, 1}},
      {"1-D stride 2 dilation 2, odd channels, 2 images", {2, 7, 9}, {5, 7, 3}, 1, {2}, {2}, {2, 1}},
      {"grouped 1-D, 3 groups", {1, 9, 6}, {6, 3, 3}, 3, {1}, {1}, {1, 1}},
      {"pointwise over 3 positions", {1, 13, 3}, {11, 13, 1}, 1, {1}, {1}, {0, 0}},
      {"2-D 2x2 output", {1, 5, 5, 5}, {3, 5, 3, 3}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {"2-D 1x8 output, asymmetric pads", {1, 6, 2, 8}, {4, 6, 3, 3}, 1, {2, 1}, {1, 1}, {1, 1, 0, 1}},
      {"8 positions: the last narrow size", {1, 17, 8}, {19, 17, 3}, 1, {1}, {1}, {1, 1}},
      {"9 positions: blocked", {1, 17, 9}, {19, 17, 3}, 1, {1}, {1}, {1, 1}},
      {"2-D 7x7: blocked", {1, 3, 9, 9}, {8, 3, 3, 3}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
  };
}

ConvPlan plan_of(const Case& c) {
  ConvAttrs a;
  a.group = c.group;
  a.strides = c.strides;
  a.dilations = c.dilations;
  a.pads = c.pads;
  a.has_pads = true;
  const Shape b({c.w[0]});
  auto p = ConvPlan::make(a, Shape(c.x), Shape(c.w), &b, "test");
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return std::move(p).value();
}

// y[n, m, o...] = b[m] + sum over c in m's group, taps k inside the input, of x * w, in double.
std::vector<double> direct(const Case& c, const ConvPlan& p, const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& b) {
  const int64_t r = static_cast<int64_t>(c.x.size()) - 2;
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], Cg = C / c.group, Mg = M / c.group;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end());
  const std::vector<int64_t>& out = p.g.out;
  int64_t is = 1, os = 1, ks = 1;
  for (int64_t d = 0; d < r; ++d) is *= in[d], os *= out[d], ks *= k[d];
  std::vector<double> y(static_cast<size_t>(N * M * os));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < os; ++o) {
        double acc = b[m];
        for (int64_t cc = 0; cc < Cg; ++cc)
          for (int64_t t = 0; t < ks; ++t) {
            int64_t oi = o, ti = t, idx = 0, stride_in = 1;
            bool inside = true;
            std::vector<int64_t> pos(r);
            for (int64_t d = r - 1; d >= 0; --d) {
              const int64_t od = oi % out[d], td = ti % k[d];
              oi /= out[d];
              ti /= k[d];
              pos[d] = od * c.strides[d] - c.pads[d] + td * c.dilations[d];
              inside = inside && pos[d] >= 0 && pos[d] < in[d];
            }
            if (!inside) continue;
            for (int64_t d = r - 1; d >= 0; --d) {
              idx += pos[d] * stride_in;
              stride_in *= in[d];
            }
            const int64_t ci = (m / Mg) * Cg + cc;
            acc += x[static_cast<size_t>((n * C + ci) * is + idx)] * w[static_cast<size_t>((m * Cg + cc) * ks + t)];
          }
        y[static_cast<size_t>((n * M + m) * os + o)] = acc;
      }
  return y;
}

template <typename T>
std::vector<T> run(const ConvPlan& p, const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b) {
  std::vector<T> y(static_cast<size_t>(p.out_shape.numel())), col(static_cast<size_t>(p.col_size()) + 1),
      ws(static_cast<size_t>(p.workspace_size()) + 1);
  conv_forward<T>(p, x.data(), w.data(), b.data(), y.data(), col.data(), ws.data(), NoConvEpilogue{});
  return y;
}

TEST(ConvForward, BothPathsMatchADirectConvolution) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const ConvPlan p = plan_of(c);
    EXPECT_EQ(p.narrow(), p.os <= kSmallMMaxRows);
    std::vector<double> x(static_cast<size_t>(Shape(c.x).numel())), w(static_cast<size_t>(Shape(c.w).numel())),
        b(static_cast<size_t>(c.w[0]));
    for (auto* v : {&x, &w, &b})
      for (double& e : *v) e = u(rng);
    const std::vector<double> want = direct(c, p, x, w, b);
    const std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end()), bf(b.begin(), b.end());
    const std::vector<float> got = run<float>(p, xf, wf, bf);
    const std::vector<double> got_d = run<double>(p, x, w, b);
    const int64_t taps = Shape(c.w).numel() / c.w[0];
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-5 * std::sqrt(static_cast<double>(taps)) * 4) << "at " << i;
      ASSERT_NEAR(got_d[i], want[i], 1e-12) << "at " << i;
    }
  }
}

TEST(ConvForward, NarrowPathIsTheSameAtEveryPoolSize) {
  const Case c = cases()[0];
  const ConvPlan p = plan_of(c);
  ASSERT_TRUE(p.narrow());
  std::vector<float> x(static_cast<size_t>(Shape(c.x).numel())), w(static_cast<size_t>(Shape(c.w).numel())),
      b(static_cast<size_t>(c.w[0]));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* v : {&x, &w, &b})
    for (float& e : *v) e = u(rng);
  const std::vector<float> one = run<float>(p, x, w, b);
  ThreadPool pool(3);
  ScopedThreadPool bind(&pool);
  EXPECT_EQ(run<float>(p, x, w, b), one);
}

}  // namespace
}  // namespace sdx::cpu
