#include <algorithm>
#include <cmath>
#include <limits>

#include <string>
#include <vector>

#include "bound_test_util.h"
#include "kernel_test_util.h"
#include "vectorized_test_util.h"

namespace sdx {
namespace {
using namespace test;

// Max / Min over short contiguous rows (<= 8 values: a scalar loop, not a vector call per row) and
// long ones: NaN wins wherever it sits, infinities and signed values otherwise.
TEST(ReduceOps, MaxMinOverShortAndLongRows) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {3, 8, 9, 40}) {
    SCOPED_TRACE(n);
    std::vector<float> x(static_cast<size_t>(4 * n));
    for (int64_t i = 0; i < 4 * n; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 7) % 11) - 5.f;
    x[static_cast<size_t>(n - 1)] = nan;     // row 0: NaN last
    x[static_cast<size_t>(n)] = nan;         // row 1: NaN first
    x[static_cast<size_t>(2 * n + 1)] = -inf;  // row 2: -inf, no NaN
    x[static_cast<size_t>(3 * n)] = inf;       // row 3: +inf first
    const Tensor t = f32(x, {4, n});
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      auto y = run_node(op, {t, i64({1}, {1})}, {attr_i("keepdims", 0)}, 18);
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      const float* r = (*y)[0].data<float>();
      EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1])) << op;
      for (int row = 2; row < 4; ++row) {
        float want = x[static_cast<size_t>(row * n)];
        for (int64_t j = 1; j < n; ++j) {
          const float v = x[static_cast<size_t>(row * n + j)];
          want = std::string(op) == "ReduceMax" ? std::max(want, v) : std::min(want, v);
        }
        EXPECT_EQ(r[row], want) << op << " row " << row;
      }
    }
  }
}

TEST(ReduceOps, SumAxesAttributeOldOpset) {
  auto y = run_node("ReduceSum", {f32({1, 2, 3, 4, 5, 6}, {2, 3})}, {attr_ints("axes", {1}), attr_i("keepdims", 0)}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{2}));
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{6, 15}));
}

// Found by the onnx_model fuzzer: log(0) = -inf stored into an integer output was UB; it saturates.
TEST(ReduceOps, LogSumOfIntegerZerosSaturates) {
  auto y = run_node("ReduceLogSum", {i64({0, 0}, {2})}, {attr_i("keepdims", 0)}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>((*y)[0]), (std::vector<int64_t>{INT64_MIN}));
}

TEST(ReduceOps, MeanAxesInputKeepDims) {
  auto y = run_node("ReduceMean", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), i64({0}, {1})}, {}, 18);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 3}));
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{2.5f, 3.5f, 4.5f}));
}

TEST(ReduceOps, NoAxesReducesAllUnlessNoop) {
  auto all = run_node("ReduceMax", {f32({1, 7, 3, 4}, {2, 2})}, {attr_i("keepdims", 0)}, 18);
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  EXPECT_EQ((*all)[0].rank(), 0);
  EXPECT_EQ(values<float>((*all)[0]), (std::vector<float>{7}));
  auto noop = run_node("ReduceSumSquare", {f32({1, -2, 3, 4}, {2, 2})}, {attr_i("noop_with_empty_axes", 1)}, 18);
  ASSERT_TRUE(noop.is_ok()) << noop.status().to_string();
  EXPECT_EQ(values<float>((*noop)[0]), (std::vector<float>{1, 4, 9, 16}));
}

TEST(ReduceOps, EmptySetGivesIdentity) {
  Tensor x = f32({}, {2, 0});
  auto mn = run_node("ReduceMin", {x, i64({1}, {1})}, {}, 18);
  ASSERT_TRUE(mn.is_ok()) << mn.status().to_string();
  EXPECT_EQ(values<float>((*mn)[0]), (std::vector<float>{INFINITY, INFINITY}));
  auto lse = run_node("ReduceLogSumExp", {x, i64({1}, {1})}, {}, 18);
  ASSERT_TRUE(lse.is_ok());
  EXPECT_EQ(values<float>((*lse)[0]), (std::vector<float>{-INFINITY, -INFINITY}));
  auto prod = run_node("ReduceProd", {x, i64({1}, {1})}, {}, 18);
  ASSERT_TRUE(prod.is_ok());
  EXPECT_EQ(values<float>((*prod)[0]), (std::vector<float>{1, 1}));
}

TEST(ReduceOps, NormsAndLogs) {
  Tensor x = f32({3, -4, 1, 1}, {2, 2});
  auto l1 = run_node("ReduceL1", {x, i64({1}, {1})}, {attr_i("keepdims", 0)}, 18);
  auto l2 = run_node("ReduceL2", {x, i64({1}, {1})}, {attr_i("keepdims", 0)}, 18);
  auto lse = run_node("ReduceLogSumExp", {f32({1000, 1000}, {2})}, {attr_i("keepdims", 0)}, 18);
  ASSERT_TRUE(l1.is_ok() && l2.is_ok() && lse.is_ok());
  expect_near(values<float>((*l1)[0]), {7, 2});
  expect_near(values<float>((*l2)[0]), {5, std::sqrt(2.f)});
  expect_near(values<float>((*lse)[0]), {1000 + std::log(2.f)}, 1e-3f);
}

TEST(ReduceOps, IntegerSum) {
  auto y = run_node("ReduceSum", {i32({1, 2, 3, 4}, {4}), i64({-1}, {1})}, {attr_i("keepdims", 0)}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int32_t>((*y)[0]), (std::vector<int32_t>{10}));
}

TEST(ReduceOps, BadAxisIsAnError) {
  auto y = run_node("ReduceSum", {f32({1, 2}, {2}), i64({3}, {1})}, {}, 13);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("axis 3"), std::string::npos) << y.status().to_string();
  auto dup = run_node("ReduceSum", {f32({1, 2, 3, 4}, {2, 2}), i64({0, -2}, {2})}, {}, 13);
  EXPECT_FALSE(dup.is_ok());
}

// Float reductions of contiguous rows on the vector kernels: every level against a double
// reference at odd row lengths, NaN rows, 1 vs 2 threads, bound form equal to run().
TEST(ReduceOps, VectorizedRowsMatchReferenceAndThreads) {
  const std::vector<std::string> ops = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                        "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceSumSquare"};
  for (cpu::simd::Isa isa : isa_levels()) {
    cpu::simd::ScopedIsa scope(isa);
    for (int64_t n : odd_sizes()) {
      const int64_t rows = 4;
      SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + " n=" + std::to_string(n));
      std::vector<float> x = random_floats(rows * n, static_cast<uint32_t>(n));
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::fabs(x[i]) + (i % 3 == 0 ? 0.f : 0.5f);  // LogSum of a positive sum
      if (n > 3) x[static_cast<size_t>(2 * n + 3)] = std::numeric_limits<float>::quiet_NaN();   // row 2 has a NaN
      for (const std::string& op : ops) {
        const Tensor xt = f32(x, {rows, n});
        auto y = run_single(op, {xt, i64({-1}, {1})}, {attr_i("keepdims", 0)}, 18);
        ASSERT_TRUE(y.is_ok()) << op << ": " << y.status().to_string();
        std::vector<float> got = values<float>(*y);
        for (int64_t r = 0; r < rows; ++r) {
          double s = 0, sa = 0, ss = 0, mx = -INFINITY, mn = INFINITY;
          bool nan = false;
          for (int64_t k = 0; k < n; ++k) {
            const double v = x[static_cast<size_t>(r * n + k)];
            nan = nan || std::isnan(v);
            s += v, sa += std::fabs(v), ss += v * v, mx = std::max(mx, v), mn = std::min(mn, v);
          }
          double want = op == "ReduceSum" ? s : op == "ReduceMean" ? s / static_cast<double>(n)
                      : op == "ReduceMax" ? mx : op == "ReduceMin" ? mn : op == "ReduceL1" ? sa
                      : op == "ReduceL2" ? std::sqrt(ss) : op == "ReduceLogSum" ? std::log(s) : ss;
          const float g = got[static_cast<size_t>(r)];
          if (nan) {
            EXPECT_TRUE(std::isnan(g)) << op << " row " << r;
            continue;
          }
          EXPECT_NEAR(g, want, std::fabs(want) * 1.2e-7) << op << " row " << r;
        }
        expect_bound_matches({.op = op, .opset = 18, .inputs = {xt, i64({-1}, {1})}, .attrs = {attr_i("keepdims", 0)}}, {1});
      }
    }
    const Tensor big = f32(random_floats(4096 * 65, 1), {4096, 65});
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceL2"})
      expect_same_bits_at_1_and_2_threads({.op = op, .opset = 18, .inputs = {big, i64({1}, {1})}});
  }
}

}  // namespace
}  // namespace sdx
