// The small-M kernel (backend/cpu/gemm/small_m_gemm.h) for float32, float16 and int8 weights: against a
// double-precision reference on odd sizes (column tails of 1..7 and partial 64-column blocks, K not a
// multiple of 8), the vectorized kernel against the portable one bit for bit, and the threaded split
// against the unthreaded one bit for bit.
#include "backend/cpu/gemm/small_m_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/simd/isa.h"
#include "backend/cpu/threading/thread_pool.h"
#include "core/float16.h"

namespace sdx::cpu {
namespace {

// A weight matrix [K, N] with row stride ldw in one of the three storage types, and its exact float values.
struct TestWeights {
  WeightType type;
  int64_t K, N, ldw;
  std::vector<float> f32;
  std::vector<uint16_t> f16;
  std::vector<int8_t> i8;
  std::vector<float> scale;
  std::vector<double> value;  // [K, N] (unscaled for int8)

  SmallMWeights view() const {
    SmallMWeights w;
    w.type = type;
    w.ldw = ldw;
    w.data = type == WeightType::kFloat32   ? static_cast<const void*>(f32.data())
             : type == WeightType::kFloat16 ? static_cast<const void*>(f16.data())
                                            : static_cast<const void*>(i8.data());
    w.scale = type == WeightType::kInt8 ? scale.data() : nullptr;
    return w;
  }
};

TestWeights make_weights(WeightType type, int64_t K, int64_t N, int64_t pad, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  TestWeights w{type, K, N, N + pad, {}, {}, {}, {}, {}};
  const size_t total = static_cast<size_t>(K * w.ldw);
  w.value.assign(static_cast<size_t>(K * N), 0.0);
  if (type == WeightType::kFloat32) w.f32.assign(total, NAN);  // padding must never be read into a result
  if (type == WeightType::kFloat16) w.f16.assign(total, 0x7e00);
  if (type == WeightType::kInt8) {
    w.i8.assign(total, 127);
    w.scale.resize(static_cast<size_t>(N));
    for (float& s : w.scale) s = 0.01f + 0.02f * std::fabs(dist(rng));
  }
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(k * w.ldw + n);
      double v = 0;
      if (type == WeightType::kFloat32) {
        w.f32[i] = dist(rng);
        v = w.f32[i];
      } else if (type == WeightType::kFloat16) {
        const Float16 h = Float16::from_float(dist(rng));
        w.f16[i] = h.bits;
        v = h.to_float();
      } else {
        w.i8[i] = static_cast<int8_t>(std::lround(dist(rng) * 127.f));
        v = w.i8[i];
      }
      w.value[static_cast<size_t>(k * N + n)] = v;
    }
  }
  return w;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

const char* type_name(WeightType t) {
  return t == WeightType::kFloat32 ? "f32" : t == WeightType::kFloat16 ? "f16" : "i8";
}

constexpr WeightType kTypes[] = {WeightType::kFloat32, WeightType::kFloat16, WeightType::kInt8};

TEST(SmallMGemm, MatchesDoubleReferenceOnOddSizes) {
  const int64_t Ms[] = {1, 2, 3, 8};
  const int64_t Ns[] = {1, 7, 17, 33, 64, 1003};
  const int64_t Ks[] = {1, 7, 17, 1027};
  for (WeightType type : kTypes)
    for (int64_t M : Ms)
      for (int64_t N : Ns)
        for (int64_t K : Ks) {
          SCOPED_TRACE(std::string(type_name(type)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                       " K=" + std::to_string(K));
          const TestWeights w = make_weights(type, K, N, /*pad=*/3, static_cast<unsigned>(M * 1000 + N + K));
          const int64_t ldx = K + 2, ldy = N + 5;
          const std::vector<float> x = random_floats(static_cast<size_t>(M * ldx), 5);
          std::vector<float> y(static_cast<size_t>(M * ldy), -7.f);
          small_m_gemm(M, N, K, x.data(), ldx, w.view(), 1.f, 0.f, y.data(), ldy, [](int64_t, int64_t) {});
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t n = 0; n < N; ++n) {
              double ref = 0, mag = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double p = static_cast<double>(x[static_cast<size_t>(m * ldx + k)]) *
                                 w.value[static_cast<size_t>(k * N + n)];
                ref += p;
                mag += std::fabs(p);
              }
              const double s = type == WeightType::kInt8 ? w.scale[static_cast<size_t>(n)] : 1.0;
              // float32 accumulation of K products: error <= K * 2^-24 * sum |x w| (plus the scale's rounding).
              const double tol = (static_cast<double>(K) + 2) * 6e-8 * mag * s + 1e-30;
              ASSERT_NEAR(y[static_cast<size_t>(m * ldy + n)], ref * s, tol) << "m=" << m << " n=" << n;
            }
            for (int64_t n = N; n < ldy; ++n) ASSERT_EQ(y[static_cast<size_t>(m * ldy + n)], -7.f) << "wrote past N";
          }
        }
}

TEST(SmallMGemm, AlphaBetaAndEpilogueChunks) {
  const int64_t M = 3, N = 200, K = 45;
  const TestWeights w = make_weights(WeightType::kFloat32, K, N, 0, 9);
  const std::vector<float> x = random_floats(static_cast<size_t>(M * K), 10);
  const std::vector<float> c0 = random_floats(static_cast<size_t>(M * N), 11);
  std::vector<float> y = c0;
  std::vector<int> visited(static_cast<size_t>(N), 0);
  small_m_gemm(M, N, K, x.data(), K, w.view(), 0.5f, 2.f, y.data(), N, [&](int64_t n0, int64_t n1) {
    EXPECT_EQ(n0 % kSmallMBlock, 0);
    for (int64_t n = n0; n < n1; ++n) ++visited[static_cast<size_t>(n)];
  });
  for (int v : visited) EXPECT_EQ(v, 1);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += static_cast<double>(x[static_cast<size_t>(m * K + k)]) * w.value[static_cast<size_t>(k * N + n)];
      ref = 0.5 * ref + 2.0 * c0[static_cast<size_t>(m * N + n)];
      EXPECT_NEAR(y[static_cast<size_t>(m * N + n)], ref, 1e-4);
    }
}

// The vectorized kernel computes the portable kernel's FMA chain: same bits (also for alpha/beta and
// the int8 scales), which also makes results identical across machines with and without AVX2.
// Every vector level the CPU has (AVX-512: all rows up to 8 in one tile; AVX2: row pairs), every M up to
// kSmallMMaxRows.
TEST(SmallMGemm, VectorizedMatchesPortableBitwise) {
  if (!small_m_gemm_vectorized()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  std::vector<simd::Isa> levels = {simd::Isa::kAvx2};
  if (simd::detected_isa() == simd::Isa::kAvx512) levels.push_back(simd::Isa::kAvx512);
  for (simd::Isa level : levels)
  for (WeightType type : kTypes)
    for (int64_t M = 1; M <= kSmallMMaxRows; ++M)
      for (int64_t N : {7, 33, 130})
        for (int64_t K : {9, 300}) {
          simd::ScopedIsa isa(level);
          SCOPED_TRACE(std::string(simd::isa_name(level)) + " " + type_name(type) + " M=" + std::to_string(M) +
                       " N=" + std::to_string(N) + " K=" + std::to_string(K));
          const TestWeights w = make_weights(type, K, N, 1, 21);
          const std::vector<float> x = random_floats(static_cast<size_t>(M * K), 22);
          const std::vector<float> c0 = random_floats(static_cast<size_t>(M * N), 23);
          for (float beta : {0.f, 1.5f}) {
            std::vector<float> a = c0, b = c0;
            small_m_gemm_columns(M, K, x.data(), K, w.view(), 0.75f, beta, a.data(), N, 0, N);
            detail::small_m_gemm_columns_portable(M, K, x.data(), K, w.view(), 0.75f, beta, b.data(), N, 0, N);
            ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "beta " << beta;
          }
        }
}

// Rows do not depend on M, nor columns on the split: the 2-thread pool gives the inline run's bits.
TEST(SmallMGemm, ThreadedSplitAndRowCountDoNotChangeBits) {
  ThreadPool pool(2);
  for (WeightType type : kTypes) {
    SCOPED_TRACE(type_name(type));
    const int64_t M = 5, N = 1003, K = 257;  // 16 column blocks, grain 2: several chunks per thread
    const TestWeights w = make_weights(type, K, N, 0, 31);
    const std::vector<float> x = random_floats(static_cast<size_t>(M * K), 32);
    std::vector<float> inline_y(static_cast<size_t>(M * N)), pooled_y(inline_y.size()), row_y(inline_y.size());
    small_m_gemm(M, N, K, x.data(), K, w.view(), 1.f, 0.f, inline_y.data(), N, [](int64_t, int64_t) {});
    {
      ScopedThreadPool scope(&pool);
      small_m_gemm(M, N, K, x.data(), K, w.view(), 1.f, 0.f, pooled_y.data(), N, [](int64_t, int64_t) {});
      for (int64_t m = 0; m < M; ++m)  // one row at a time (the R = 1 tile instead of row pairs)
        small_m_gemm(1, N, K, x.data() + m * K, K, w.view(), 1.f, 0.f, row_y.data() + m * N, N,
                     [](int64_t, int64_t) {});
    }
    EXPECT_EQ(std::memcmp(inline_y.data(), pooled_y.data(), inline_y.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(inline_y.data(), row_y.data(), inline_y.size() * sizeof(float)), 0);
  }
}

// Repacked weights (contiguous 64-column blocks) give the unpacked bits, threaded or not.
TEST(SmallMGemm, PackedWeightsGiveTheSameBits) {
  ThreadPool pool(2);
  for (WeightType type : kTypes)
    for (int64_t N : {5, 64, 200}) {
      SCOPED_TRACE(std::string(type_name(type)) + " N=" + std::to_string(N));
      const int64_t M = 3, K = 77;
      const TestWeights w = make_weights(type, K, N, /*pad=*/2, 41);
      const SmallMPackedWeights packed(w.view(), K, N);
      const std::vector<float> x = random_floats(static_cast<size_t>(M * K), 42);
      std::vector<float> a(static_cast<size_t>(M * N)), b(a.size());
      std::vector<int> visited(static_cast<size_t>(N), 0);
      small_m_gemm(M, N, K, x.data(), K, w.view(), 1.f, 0.f, a.data(), N, [](int64_t, int64_t) {});
      ScopedThreadPool scope(&pool);
      small_m_gemm_packed(M, N, K, x.data(), K, packed, 1.f, 0.f, b.data(), N, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) ++visited[static_cast<size_t>(n)];
      });
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
      for (int v : visited) EXPECT_EQ(v, 1);
    }
}

// small_m_gemm_blocks at one row (two blocks per call on AVX-512), ascending and descending, over odd and
// even block counts with a partial last block, alpha and beta and the int8 scales: the bits of one
// small_m_gemm_columns call per block, at every vector level.
TEST(SmallMGemm, BlockPairsGiveThePerBlockBits) {
  std::vector<simd::Isa> levels = {simd::Isa::kScalar};
  if (small_m_gemm_vectorized()) levels.push_back(simd::Isa::kAvx2);
  if (small_m_gemm_vectorized() && simd::detected_isa() == simd::Isa::kAvx512) levels.push_back(simd::Isa::kAvx512);
  for (simd::Isa level : levels)
    for (WeightType type : kTypes)
      for (int64_t N : {64, 200, 256, 320})
        for (bool descending : {false, true}) {
          simd::ScopedIsa isa(level);
          SCOPED_TRACE(std::string(simd::isa_name(level)) + " " + type_name(type) + " N=" + std::to_string(N) +
                       (descending ? " descending" : ""));
          const int64_t K = 45, blocks = (N + kSmallMBlock - 1) / kSmallMBlock;
          const TestWeights w = make_weights(type, K, N, /*pad=*/0, 51);
          const SmallMPackedWeights packed(w.view(), K, N);
          const std::vector<float> x = random_floats(static_cast<size_t>(K), 52);
          const std::vector<float> c0 = random_floats(static_cast<size_t>(N), 53);
          for (float beta : {0.f, 0.5f}) {
            std::vector<float> a = c0, b = c0;
            small_m_gemm_blocks(1, K, x.data(), K, packed, 0, blocks, 0.75f, beta, a.data(), N, descending);
            for (int64_t blk = 0; blk < blocks; ++blk) {
              const SmallMWeights wb = packed.block(blk);
              small_m_gemm_columns(1, K, x.data(), K, wb, 0.75f, beta, b.data() + blk * kSmallMBlock, N, 0, wb.ldw);
            }
            ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "beta " << beta;
          }
        }
}

}  // namespace
}  // namespace sdx::cpu
