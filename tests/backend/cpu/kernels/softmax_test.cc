#include <cmath>
#include <string>
#include <vector>

#include "bound_test_util.h"
#include "kernel_test_util.h"
#include "vectorized_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(Softmax, LastAxis) {
  auto y = run_node("Softmax", {f32({0, std::log(3.f), 1000, 1000}, {2, 2})}, {}, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {0.25f, 0.75f, 0.5f, 0.5f});
}

TEST(Softmax, Opset11CoercesTo2D) {
  // axis=1 on [1, 2, 2]: softmax over all 4 elements (not per column as in opset 13).
  auto y = run_node("Softmax", {f32({0, 0, 0, 0}, {1, 2, 2})}, {attr_i("axis", 1)}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {0.25f, 0.25f, 0.25f, 0.25f});
  auto y13 = run_node("Softmax", {f32({0, 0, 0, 0}, {1, 2, 2})}, {attr_i("axis", 1)}, 13);
  ASSERT_TRUE(y13.is_ok());
  expect_near(values<float>((*y13)[0]), {0.5f, 0.5f, 0.5f, 0.5f});
}

TEST(Softmax, LogSoftmaxAndHardmax) {
  auto ls = run_node("LogSoftmax", {f32({1, 1}, {2})}, {}, 13);
  ASSERT_TRUE(ls.is_ok());
  expect_near(values<float>((*ls)[0]), {-std::log(2.f), -std::log(2.f)});
  auto hm = run_node("Hardmax", {f32({1, 3, 3, 2}, {2, 2})}, {attr_i("axis", 0)}, 13);
  ASSERT_TRUE(hm.is_ok());
  EXPECT_EQ(values<float>((*hm)[0]), (std::vector<float>{0, 1, 1, 0}));
}

TEST(Softmax, BadAxisAndTypeAreErrors) {
  EXPECT_FALSE(run_node("Softmax", {f32({1, 2}, {2})}, {attr_i("axis", 1)}, 13).is_ok());
  EXPECT_FALSE(run_node("Softmax", {i64({1, 2}, {2})}, {}, 13).is_ok());
}

// Float rows on the vector kernels: every level against a double reference at odd row lengths
// (vector tails), the same bits at 1 and 2 threads, bound form equal to run().
TEST(Softmax, VectorizedRowsMatchReferenceAndThreads) {
  for (cpu::simd::Isa isa : isa_levels()) {
    cpu::simd::ScopedIsa scope(isa);
    for (int64_t n : odd_sizes()) {
      const int64_t rows = 5;
      SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + " n=" + std::to_string(n));
      const std::vector<float> x = random_floats(rows * n, static_cast<uint32_t>(n));
      for (const char* op : {"Softmax", "LogSoftmax"}) {
        auto y = run_single(op, {f32(x, {rows, n})}, {}, 13);
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        std::vector<double> want;
        for (int64_t r = 0; r < rows; ++r) {
          double m = -INFINITY, s = 0;
          for (int64_t k = 0; k < n; ++k) m = std::max(m, static_cast<double>(x[r * n + k]));
          // x - max rounds to float first, as in the kernel (and in every float softmax).
          auto shifted = [&](int64_t k) { return static_cast<double>(x[r * n + k] - static_cast<float>(m)); };
          for (int64_t k = 0; k < n; ++k) s += std::exp(shifted(k));
          for (int64_t k = 0; k < n; ++k)
            want.push_back(std::string(op) == "Softmax" ? std::exp(shifted(k)) / s : x[r * n + k] - m - std::log(s));
        }
        // Softmax: a few ulp; LogSoftmax: x - float(max + log(sum)), a few ulp of that shift (< 64).
        expect_close_ulps(values<float>(*y), want, 4, std::string(op) == "Softmax" ? 0 : 2e-5);
        expect_bound_matches({.op = op, .opset = 13, .inputs = {f32(x, {rows, n})}});
      }
    }
    const Tensor big = f32(random_floats(256 * 129, 1), {2, 128, 129});
    expect_same_bits_at_1_and_2_threads({.op = "Softmax", .opset = 13, .inputs = {big}});
    expect_same_bits_at_1_and_2_threads({.op = "LogSoftmax", .opset = 13, .inputs = {big}});
  }
}

// Float along a middle axis (inner > 1, YOLOv8's DFL softmax over 16 bins): the column blocks on the
// vector kernels against a double reference at inner sizes around the block width (tails), the same bits
// at 1 and 2 threads, bound form equal to run().
TEST(Softmax, StridedAxisMatchesReferenceAndThreads) {
  for (cpu::simd::Isa isa : isa_levels()) {
    cpu::simd::ScopedIsa scope(isa);
    for (int64_t inner : {int64_t{3}, int64_t{17}, int64_t{255}, int64_t{257}, int64_t{600}}) {
      const int64_t outer = 2, n = 16;
      SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + " inner=" + std::to_string(inner));
      const std::vector<float> x = random_floats(outer * n * inner, static_cast<uint32_t>(inner));
      for (const char* op : {"Softmax", "LogSoftmax"}) {
        auto y = run_single(op, {f32(x, {outer, n, inner})}, {attr_i("axis", 1)}, 13);
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        std::vector<double> want(x.size());
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            auto at = [&](int64_t k) { return static_cast<size_t>((o * n + k) * inner + i); };
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < n; ++k) m = std::max(m, static_cast<double>(x[at(k)]));
            auto shifted = [&](int64_t k) { return static_cast<double>(x[at(k)] - static_cast<float>(m)); };
            for (int64_t k = 0; k < n; ++k) s += std::exp(shifted(k));
            for (int64_t k = 0; k < n; ++k)
              want[at(k)] = std::string(op) == "Softmax" ? std::exp(shifted(k)) / s : x[at(k)] - m - std::log(s);
          }
        expect_close_ulps(values<float>(*y), want, 4, std::string(op) == "Softmax" ? 0 : 2e-5);
        expect_bound_matches({.op = op, .opset = 13, .inputs = {f32(x, {outer, n, inner})}, .attrs = {attr_i("axis", 1)}});
      }
    }
    const Tensor big = f32(random_floats(2 * 16 * 4 * 2100, 2), {2, 16, 4, 2100});
    expect_same_bits_at_1_and_2_threads({.op = "Softmax", .opset = 13, .inputs = {big}, .attrs = {attr_i("axis", 1)}});
    expect_same_bits_at_1_and_2_threads({.op = "LogSoftmax", .opset = 13, .inputs = {big}, .attrs = {attr_i("axis", 1)}});
  }
}

}  // namespace
}  // namespace sdx
