// NaN and infinities through the vector kernels (simd/vector_ops.h) at every instruction-set level this
// CPU has: a NaN (either sign) at every position of rows of every length up to 4 vectors and a tail
// comes out NaN at exactly that position, for the maps (relu included), the binary ops and the row
// reductions (the x86 max/min return their second operand when either is NaN, which the kernels must
// not let hide a NaN); infinities give the limits; relu is its scalar formula bit for bit.
#include "backend/cpu/simd/vector_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/simd/isa.h"

namespace sdx::cpu::simd {
namespace {

std::vector<Isa> levels() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa())) out.push_back(isa);
  return out;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::vector<float> row(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 3.f * std::sin(0.7f * static_cast<float>(i) + 0.1f);
  return x;
}

TEST(SimdVectorOps, MapsKeepNaNAtEveryPosition) {
  using Map = std::function<void(const float*, float*, int64_t)>;
  const std::vector<std::pair<std::string, Map>> maps = {
      {"exp", [](const float* x, float* y, int64_t n) { exp(x, y, n); }},
      {"erf", [](const float* x, float* y, int64_t n) { erf(x, y, n); }},
      {"tanh", [](const float* x, float* y, int64_t n) { tanh(x, y, n); }},
      {"sigmoid", [](const float* x, float* y, int64_t n) { sigmoid(x, y, n); }},
      {"gelu", [](const float* x, float* y, int64_t n) { gelu(x, y, n); }},
      {"gelu_tanh", [](const float* x, float* y, int64_t n) { gelu_tanh(x, y, n); }},
      {"swish", [](const float* x, float* y, int64_t n) { swish(x, y, n, 1.5f); }},
      {"relu", [](const float* x, float* y, int64_t n) { relu(x, y, n); }},
      {"add", [](const float* x, float* y, int64_t n) { binary_vs(BinaryOp::kAdd, x, 1.f, y, n); }},
      {"sub", [](const float* x, float* y, int64_t n) { binary_sv(BinaryOp::kSub, 1.f, x, y, n); }},
      {"mul", [](const float* x, float* y, int64_t n) { binary_vv(BinaryOp::kMul, x, x, y, n); }},
      {"div", [](const float* x, float* y, int64_t n) { binary_vs(BinaryOp::kDiv, x, 3.f, y, n); }},
  };
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    for (const auto& [name, f] : maps) {
      for (int64_t n = 1; n <= 70; ++n) {
        for (int64_t p = 0; p < n; ++p) {
          std::vector<float> x = row(n), y(static_cast<size_t>(n));
          x[static_cast<size_t>(p)] = (p % 2) ? -kNaN : kNaN;
          f(x.data(), y.data(), n);
          for (int64_t j = 0; j < n; ++j)
            ASSERT_EQ(std::isnan(y[static_cast<size_t>(j)]), j == p)
                << isa_name(isa) << " " << name << " n " << n << " NaN at " << p << ", element " << j;
        }
      }
    }
  }
}

// relu is exactly x <= 0 ? +0 : x (ReluOp in activation.h), bit for bit, at every level: NaN of either
// sign passes unchanged, -0 and negatives give +0, denormals and infinities are kept.
TEST(SimdVectorOps, ReluIsTheScalarFormulaBitForBit) {
  std::vector<float> x = {kNaN, -kNaN, kInf, -kInf, 0.f, -0.f, 1e-45f, -1e-45f, 1e-40f, -1e-40f, 1.f, -1.f,
                          3.4e38f, -3.4e38f, 2.5f, -7.f, 1.17549435e-38f};
  for (int k = 0; k < 60; ++k) x.push_back(x[static_cast<size_t>(k)] * 0.75f);  // 77 values: every lane and tails
  const int64_t n = static_cast<int64_t>(x.size());
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    for (int64_t start = 0; start < 17; ++start) {
      std::vector<float> y(x.size(), 123.f);
      relu(x.data() + start, y.data(), n - start);
      for (int64_t i = 0; i < n - start; ++i) {
        const float v = x[static_cast<size_t>(start + i)], want = v <= 0.f ? 0.f : v;
        ASSERT_EQ(std::memcmp(&y[static_cast<size_t>(i)], &want, 4), 0)
            << isa_name(isa) << " x = " << v << ": got " << y[static_cast<size_t>(i)] << ", want " << want;
      }
    }
  }
}

TEST(SimdVectorOps, RowMaxMinReturnNaNWhereverItIs) {
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    for (int64_t n = 1; n <= 70; ++n) {
      for (int64_t p = 0; p < n; ++p) {
        std::vector<float> x = row(n);
        x[static_cast<size_t>(p)] = kNaN;
        ASSERT_TRUE(std::isnan(row_max(x.data(), n))) << isa_name(isa) << " n " << n << " NaN at " << p;
        ASSERT_TRUE(std::isnan(row_min(x.data(), n))) << isa_name(isa) << " n " << n << " NaN at " << p;
        x[static_cast<size_t>(p)] = kInf;
        ASSERT_EQ(row_max(x.data(), n), kInf);
        x[static_cast<size_t>(p)] = -kInf;
        ASSERT_EQ(row_min(x.data(), n), -kInf);
      }
      const std::vector<float> x = row(n);
      float mx = -kInf, mn = kInf;
      for (float v : x) mx = std::max(mx, v), mn = std::min(mn, v);
      ASSERT_EQ(row_max(x.data(), n), mx);
      ASSERT_EQ(row_min(x.data(), n), mn);
    }
  }
}

// Softmax ignores NaN for its max but not for its sum: a NaN in the row makes the whole row NaN (as the
// ONNX reference computes it), never a row of numbers.
TEST(SimdVectorOps, SoftmaxRowWithNaNIsNaN) {
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    for (int64_t n : {1, 7, 16, 33}) {
      std::vector<float> x = row(n), y(static_cast<size_t>(n));
      x[static_cast<size_t>(n / 2)] = kNaN;
      softmax_row(x.data(), y.data(), n);
      for (float v : y) ASSERT_TRUE(std::isnan(v)) << isa_name(isa) << " n " << n;
    }
  }
}

// lstm_cell is the unfused cell's sequence of row operations bit for bit (rnn_cells.cc relies on it), at
// every level and hidden size (full vectors, tails), NaN included where it meets the gates.
TEST(SimdVectorOps, LstmCellIsTheOpByOpCellBitForBit) {
  for (Isa isa : levels()) {
    ScopedIsa scope(isa);
    for (int64_t n : {1, 5, 16, 20, 64, 67}) {
      std::vector<float> pre = row(4 * n), rh = row(4 * n + 3), rb = row(4 * n + 1), c0 = row(n + 2);
      for (size_t i = 0; i < rh.size(); ++i) rh[i] = 0.5f * rh[i] + 0.01f * static_cast<float>(i % 7);
      c0.resize(static_cast<size_t>(n));
      if (n > 4) pre[3] = kNaN;  // one NaN gate lane
      std::vector<float> c = c0, h(static_cast<size_t>(n));
      lstm_cell(pre.data(), rh.data(), rb.data(), c.data(), h.data(), n);
      // The same formulas as separate calls: t = rh + rb; gate = pre + t; activations; c = f*c + i*g; h = o*tanh(c).
      std::vector<float> t(static_cast<size_t>(4 * n)), g(t.size());
      binary_vv(BinaryOp::kAdd, rh.data(), rb.data(), t.data(), 4 * n);
      binary_vv(BinaryOp::kAdd, pre.data(), t.data(), g.data(), 4 * n);
      sigmoid(g.data(), g.data(), 3 * n);
      tanh(g.data() + 3 * n, g.data() + 3 * n, n);
      std::vector<float> fc(static_cast<size_t>(n)), ig(fc.size()), cw(fc.size()), hw(fc.size());
      binary_vv(BinaryOp::kMul, g.data() + 2 * n, c0.data(), fc.data(), n);
      binary_vv(BinaryOp::kMul, g.data(), g.data() + 3 * n, ig.data(), n);
      binary_vv(BinaryOp::kAdd, fc.data(), ig.data(), cw.data(), n);
      tanh(cw.data(), hw.data(), n);
      binary_vv(BinaryOp::kMul, g.data() + n, hw.data(), hw.data(), n);
      for (int64_t j = 0; j < n; ++j) {
        const size_t u = static_cast<size_t>(j);
        if (std::isnan(cw[u])) {
          EXPECT_TRUE(std::isnan(c[u]) && std::isnan(h[u])) << isa_name(isa) << " n " << n << " j " << j;
          continue;
        }
        EXPECT_EQ(std::memcmp(&c[u], &cw[u], sizeof(float)), 0) << isa_name(isa) << " n " << n << " c[" << j << "] " << c[u] << " vs " << cw[u];
        EXPECT_EQ(std::memcmp(&h[u], &hw[u], sizeof(float)), 0) << isa_name(isa) << " n " << n << " h[" << j << "]";
      }
    }
  }
}

}  // namespace
}  // namespace sdx::cpu::simd
