#include "backend/cpu/gemm/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

// Naive C = alpha * op(A) op(B) + beta * C.
void reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const std::vector<double>& A,
               const std::vector<double>& B, double beta, std::vector<double>& C) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
      C[i * N + j] = alpha * acc + beta * C[i * N + j];
    }
  }
}

TEST(Gemm, MatchesNaiveAcrossShapesAndTransposes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {17, 600, 9}, {9, 13, 300}, {4, 1, 0}};
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N)), c(static_cast<size_t>(M * N));
      for (float& v : a) v = dist(rng);
      for (float& v : b) v = dist(rng);
      for (float& v : c) v = dist(rng);
      std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end()), cd(c.begin(), c.end());
      reference(ta, tb, M, N, K, 0.5, ad, bd, 2.0, cd);
      gemm(ta, tb, M, N, K, 0.5f, a.data(), ta ? M : K, b.data(), tb ? K : N, 2.0f, c.data(), N);
      for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], cd[i], 1e-3) << "M=" << M << " N=" << N << " K=" << K;
    }
  }
}

// Fewer than 8 columns (a classifier head) take the dot-product path: B transposed or a single column give
// the same bits as each other and as the workspace overload, close to the naive product; beta = 0 never reads C.
TEST(Gemm, NarrowProductsAreDotProducts) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t shapes[][3] = {{1, 1, 256}, {3, 1, 37}, {1, 5, 300}, {16, 7, 9}, {2, 3, 1}};
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    std::vector<float> a(static_cast<size_t>(M * K)), bt(static_cast<size_t>(N * K));
    for (float& v : a) v = dist(rng);
    for (float& v : bt) v = dist(rng);
    std::vector<double> ad(a.begin(), a.end()), bd(bt.begin(), bt.end()), cd(static_cast<size_t>(M * N), 0.0);
    reference(false, true, M, N, K, 1.0, ad, bd, 0.0, cd);
    std::vector<float> c(static_cast<size_t>(M * N), NAN), cw(c.size(), NAN);
    std::vector<float> ws(static_cast<size_t>(gemm_workspace_size(N, K)));
    gemm(false, true, M, N, K, 1.f, a.data(), K, bt.data(), K, 0.f, c.data(), N);
    gemm(false, true, M, N, K, 1.f, a.data(), K, bt.data(), K, 0.f, cw.data(), N, ws.data());
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_NEAR(c[i], cd[i], 1e-4) << "M=" << M << " N=" << N << " K=" << K;
      ASSERT_EQ(c[i], cw[i]);
    }
    if (N == 1) {  // the same column untransposed ([K, 1], ldb 1): the same bits
      std::vector<float> c1(static_cast<size_t>(M), NAN);
      gemm(false, false, M, 1, K, 1.f, a.data(), K, bt.data(), 1, 0.f, c1.data(), 1);
      for (int64_t m = 0; m < M; ++m) ASSERT_EQ(c1[static_cast<size_t>(m)], c[static_cast<size_t>(m)]);
    }
  }
}

TEST(Gemm, BetaZeroIgnoresGarbageInC) {
  const double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  double c[] = {NAN, NAN, NAN, NAN};
  gemm(false, false, 2, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2);
  EXPECT_DOUBLE_EQ(c[0], 19);
  EXPECT_DOUBLE_EQ(c[1], 22);
  EXPECT_DOUBLE_EQ(c[2], 43);
  EXPECT_DOUBLE_EQ(c[3], 50);
}

TEST(Gemm, IntegerAccumulatesWithoutOverflow) {
  const int32_t a[] = {100000, 1}, b[] = {100000, 2};
  int64_t c = 0;
  const int64_t a64[] = {a[0], a[1]}, b64[] = {b[0], b[1]};
  gemm_int<int64_t>(false, false, 1, 1, 2, a64, 2, b64, 1, &c, 1);
  EXPECT_EQ(c, 10000000002LL);
}

}  // namespace
}  // namespace sdx::cpu

namespace sdx::cpu {
namespace {

// A few rows times a transposed B (an RNN step's h W^T, a decode step's q K^T): close to the naive product
// at every M up to 8, and the same bits on one thread and two (each element is one dot product).
TEST(Gemm, SmallMTransposedProductsDoNotDependOnTheThreadCount) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t M : {1, 2, 3, 8}) {
    const int64_t N = 300, K = 77;
    std::vector<float> a(static_cast<size_t>(M * K)), bt(static_cast<size_t>(N * K));
    for (float& v : a) v = dist(rng);
    for (float& v : bt) v = dist(rng);
    std::vector<double> ad(a.begin(), a.end()), bd(bt.begin(), bt.end()), cd(static_cast<size_t>(M * N), 0.0);
    reference(false, true, M, N, K, 1.0, ad, bd, 0.0, cd);
    std::vector<float> c1(static_cast<size_t>(M * N), NAN), c2 = c1;
    {
      ThreadPool pool(1);
      ScopedThreadPool bind(&pool);
      gemm(false, true, M, N, K, 1.f, a.data(), K, bt.data(), K, 0.f, c1.data(), N);
    }
    {
      ThreadPool pool(2);
      ScopedThreadPool bind(&pool);
      gemm(false, true, M, N, K, 1.f, a.data(), K, bt.data(), K, 0.f, c2.data(), N);
    }
    for (size_t i = 0; i < c1.size(); ++i) ASSERT_NEAR(c1[i], cd[i], 1e-4) << "M=" << M << " at " << i;
    ASSERT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float))) << "M=" << M;
  }
}

}  // namespace
}  // namespace sdx::cpu
