// The tiled float GEMM (backend/cpu/gemm/tiled_sgemm.h): against a double-precision reference over
// shapes with row and column tails, k blocks (K > 256), column panels (N > 512), every transpose, strided
// operands, alpha and beta (beta = 0 never reads C); the AVX2 and AVX-512 kernels bit for bit; and
// cpu::gemm's split over two threads against one thread bit for bit.
#include "backend/cpu/gemm/tiled_sgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

struct Problem {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  float alpha, beta;
  std::vector<float> A, B, C;

  Problem(bool ta_, bool tb_, int64_t M_, int64_t N_, int64_t K_, float alpha_, float beta_, uint32_t seed)
      : ta(ta_), tb(tb_), M(M_), N(N_), K(K_), alpha(alpha_), beta(beta_) {
    // Row strides a little past the stored width, so no kernel may assume dense rows.
    lda = (ta ? M : K) + 3;
    ldb = (tb ? K : N) + 5;
    ldc = N + 2;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    A.resize(static_cast<size_t>((ta ? K : M) * lda));
    B.resize(static_cast<size_t>((tb ? N : K) * ldb));
    C.resize(static_cast<size_t>(M * ldc));
    for (float& v : A) v = dist(rng);
    for (float& v : B) v = dist(rng);
    for (float& v : C) v = beta == 0.f ? NAN : dist(rng);
  }
  std::string name() const {
    return "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) + " ta=" +
           std::to_string(ta) + " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta);
  }
  double a(int64_t i, int64_t k) const { return ta ? A[static_cast<size_t>(k * lda + i)] : A[static_cast<size_t>(i * lda + k)]; }
  double b(int64_t k, int64_t j) const { return tb ? B[static_cast<size_t>(j * ldb + k)] : B[static_cast<size_t>(k * ldb + j)]; }
  double expected(int64_t i, int64_t j) const {
    double acc = 0;
    for (int64_t k = 0; k < K; ++k) acc += a(i, k) * b(k, j);
    return alpha * acc + (beta == 0.f ? 0.0 : beta * static_cast<double>(C[static_cast<size_t>(i * ldc + j)]));
  }
};

const int64_t kShapes[][3] = {{1, 1, 1},    {8, 32, 16},  {7, 33, 5},   {13, 17, 300}, {128, 128, 64},
                              {5, 600, 70}, {30, 47, 513}, {9, 1030, 3}, {6, 16, 256},  {25, 9, 0}};

TEST(TiledSgemm, MatchesDoubleReference) {
  if (!tiled_sgemm_available()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  uint32_t seed = 1;
  for (const auto& s : kShapes)
    for (int t = 0; t < 4; ++t)
      for (float beta : {0.f, 0.75f}) {
        Problem p(t & 1, t & 2, s[0], s[1], s[2], 0.5f, beta, seed++);
        std::vector<float> c = p.C;
        tiled_sgemm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A.data(), p.lda, p.B.data(), p.ldb, p.beta, c.data(), p.ldc);
        for (int64_t i = 0; i < p.M; ++i) {
          for (int64_t j = 0; j < p.N; ++j)
            ASSERT_NEAR(c[static_cast<size_t>(i * p.ldc + j)], p.expected(i, j), 1e-4 * (1 + std::sqrt(double(p.K))))
                << p.name() << " at " << i << "," << j;
          // The padding between rows of C is never written.
          for (int64_t j = p.N; j < p.ldc && i + 1 < p.M; ++j)
            ASSERT_TRUE(std::memcmp(&c[static_cast<size_t>(i * p.ldc + j)], &p.C[static_cast<size_t>(i * p.ldc + j)],
                                    sizeof(float)) == 0)
                << p.name() << " wrote the row padding at " << i << "," << j;
        }
      }
}

TEST(TiledSgemm, Avx2AndAvx512KernelsAgreeBitForBit) {
  if (!detail::tiled_isa_supported(detail::TiledIsa::kAvx512))
    GTEST_SKIP() << "this CPU has no AVX-512F: there is only one kernel to run";
  uint32_t seed = 100;
  for (const auto& s : kShapes)
    for (int t = 0; t < 4; ++t) {
      Problem p(t & 1, t & 2, s[0], s[1], s[2], 1.25f, t == 3 ? 0.f : 1.5f, seed++);
      std::vector<float> c2 = p.C, c512 = p.C;
      detail::tiled_sgemm_with(detail::TiledIsa::kAvx2, p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A.data(), p.lda,
                               p.B.data(), p.ldb, p.beta, c2.data(), p.ldc);
      detail::tiled_sgemm_with(detail::TiledIsa::kAvx512, p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A.data(), p.lda,
                               p.B.data(), p.ldb, p.beta, c512.data(), p.ldc);
      ASSERT_EQ(0, std::memcmp(c2.data(), c512.data(), c2.size() * sizeof(float))) << p.name();
    }
}

// cpu::gemm splits C over the pool by rows or by column strips; each element's sum is the same chain.
TEST(TiledSgemm, GemmSplitOverThreadsIsBitwiseTheOneThreadResult) {
  if (!tiled_sgemm_available()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  const int64_t shapes[][3] = {{256, 96, 128}, {40, 700, 96}, {128, 128, 64}, {300, 300, 300}};
  uint32_t seed = 200;
  for (const auto& s : shapes)
    for (int t = 0; t < 4; ++t) {
      Problem p(t & 1, t & 2, s[0], s[1], s[2], 1.f, 0.f, seed++);
      std::vector<float> c1 = p.C, c2 = p.C;
      {
        ThreadPool pool(1);
        ScopedThreadPool bind(&pool);
        gemm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A.data(), p.lda, p.B.data(), p.ldb, p.beta, c1.data(), p.ldc);
      }
      {
        ThreadPool pool(2);
        ScopedThreadPool bind(&pool);
        gemm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A.data(), p.lda, p.B.data(), p.ldb, p.beta, c2.data(), p.ldc);
      }
      ASSERT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float))) << p.name();
    }
}

}  // namespace
}  // namespace sdx::cpu
