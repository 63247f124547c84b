// Inputs and checks shared by the tests of the integer small-M GEMMs (int8_dynamic_gemm_test.cc: W8A8,
// int8_w16_gemm_test.cc: W8A16), whose templates take the same arguments and make the same promises:
// the chunks of the pool's split cover [0, N) once in whole blocks, each chunk's epilogue sees its
// columns final, the result does not depend on the thread count, and a row's result does not depend on M.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace sdx::cpu::test {

// int8 W [K, N] with row stride ldw = N + pad (the padding holds -128, which must never be read into a
// result) and per-column scales.
struct TestWeights {
  int64_t K, N, ldw;
  std::vector<int8_t> w;
  std::vector<float> scale;
};

inline TestWeights make_weights(int64_t K, int64_t N, int64_t pad, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-127, 127);
  std::uniform_real_distribution<float> sdist(0.001f, 0.05f);
  TestWeights t{K, N, N + pad, std::vector<int8_t>(static_cast<size_t>(K * (N + pad)), int8_t{-128}), {}};
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) t.w[static_cast<size_t>(k * t.ldw + n)] = static_cast<int8_t>(dist(rng));
  for (int64_t n = 0; n < N; ++n) t.scale.push_back(sdist(rng));
  return t;
}

// x [M, K] with row stride ldx; the padding is NaN (a read of it would turn a row into NaN).
inline std::vector<float> make_x(int64_t M, int64_t K, int64_t ldx, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> x(static_cast<size_t>(M * ldx), std::numeric_limits<float>::quiet_NaN());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(m * ldx + k)] = dist(rng);
  return x;
}

using Epilogue = std::function<void(int64_t, int64_t)>;

// gemm(y, epilogue) computes M rows of N columns into y (row stride ldy) on the bound pool (bind a pool
// of 2 or more first). 20 rounds: the result must equal `expected` (one thread) bit for bit, each
// epilogue(n0, n1) must see its columns already final, and the ranges must tile [0, N) in multiples of
// `block`, in at least 2 chunks.
inline void expect_chunks_cover_columns_once(int64_t M, int64_t N, int64_t ldy, int64_t block,
                                             const std::vector<float>& expected,
                                             const std::function<void(float*, const Epilogue&)>& gemm,
                                             const std::string& where) {
  for (int round = 0; round < 20; ++round) {
    std::vector<float> y(expected.size(), -7.f);
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    std::atomic<int> not_final{0};
    gemm(y.data(), [&](int64_t n0, int64_t n1) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = n0; n < n1; ++n) {
          const size_t i = static_cast<size_t>(m * ldy + n);
          if (std::memcmp(&y[i], &expected[i], sizeof(float)) != 0) not_final.fetch_add(1, std::memory_order_relaxed);
        }
      std::lock_guard<std::mutex> lock(mu);
      ranges.emplace_back(n0, n1);
    });
    EXPECT_EQ(not_final.load(), 0);
    ASSERT_EQ(std::memcmp(expected.data(), y.data(), y.size() * sizeof(float)), 0) << where << " round " << round;
    std::sort(ranges.begin(), ranges.end());
    ASSERT_GE(ranges.size(), 2u);
    int64_t next = 0;
    for (const auto& [n0, n1] : ranges) {
      EXPECT_EQ(n0, next);
      EXPECT_EQ(n0 % block, 0);
      EXPECT_GT(n1, n0);
      next = n1;
    }
    EXPECT_EQ(next, N);
  }
}

// gemm(rows, x, y) computes `rows` rows of N columns (row stride N) from x (row stride ldx): each row of
// an M-row product must equal the same row computed alone, bit for bit.
inline void expect_rows_independent_of_m(int64_t M, int64_t N, int64_t ldx, const std::vector<float>& x,
                                         const std::function<void(int64_t, const float*, float*)>& gemm) {
  std::vector<float> all(static_cast<size_t>(M * N));
  gemm(M, x.data(), all.data());
  for (int64_t m = 0; m < M; ++m) {
    std::vector<float> one(static_cast<size_t>(N));
    gemm(1, x.data() + m * ldx, one.data());
    EXPECT_EQ(std::memcmp(one.data(), all.data() + m * N, static_cast<size_t>(N) * sizeof(float)), 0)
        << "M=" << M << " row " << m;
  }
}

}  // namespace sdx::cpu::test
