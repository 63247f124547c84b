// onnxruntime's dynamically quantized product (backend/cpu/quant/uint8_dynamic_product.h): the parameters
// against hand-worked ranges, and every path (int8 weights on the packed blocks at each SIMD level, uint8 or
// non-zero zero points on the exact loop) bit for bit against a reference written from the header's
// formula, on odd sizes, strided A, per-column scales and zero points; NaN/Inf in A.
#include "backend/cpu/quant/uint8_dynamic_product.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/simd/isa.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

TEST(Uint8DynamicParams, RangesAlwaysHoldZero) {
  float s = 0;
  int32_t z = -1;
  const std::vector<float> zeros(5, 0.f);
  ASSERT_TRUE(uint8_dynamic_params(zeros.data(), 5, &s, &z));
  EXPECT_EQ(s, 1.0f);  // an empty range: scale 1, zero point 0
  EXPECT_EQ(z, 0);
  const std::vector<float> pos = {0.5f, 2.55f, 1.f};  // [0, 2.55]
  ASSERT_TRUE(uint8_dynamic_params(pos.data(), 3, &s, &z));
  EXPECT_EQ(s, 2.55f / 255.0f);
  EXPECT_EQ(z, 0);
  const std::vector<float> neg = {-1.f, -0.25f};  // [-1, 0]: zero at the top
  ASSERT_TRUE(uint8_dynamic_params(neg.data(), 2, &s, &z));
  EXPECT_EQ(s, 1.0f / 255.0f);
  EXPECT_EQ(z, 255);
  const std::vector<float> mixed = {-1.f, 3.f};  // 0 - (-1) / (4 / 255) = 63.75 -> 64
  ASSERT_TRUE(uint8_dynamic_params(mixed.data(), 2, &s, &z));
  EXPECT_EQ(s, 4.0f / 255.0f);
  EXPECT_EQ(z, static_cast<int32_t>(std::nearbyint(0.0f - (-1.0f) / (4.0f / 255.0f))));
  EXPECT_EQ(z, 64);
  const std::vector<float> bad = {1.f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_FALSE(uint8_dynamic_params(bad.data(), 2, &s, &z));
  const std::vector<float> inf = {-std::numeric_limits<float>::infinity(), 1.f};
  EXPECT_FALSE(uint8_dynamic_params(inf.data(), 2, &s, &z));
  const std::vector<float> huge = {-3e38f, 3e38f};  // hi - lo overflows float
  EXPECT_FALSE(uint8_dynamic_params(huge.data(), 2, &s, &z));
}

// The header's formula, written independently: quantize A as onnxruntime does, sum exactly in int64, one
// int -> float rounding (the int32 value), one multiply by the scales' float product.
std::vector<float> reference(int64_t M, int64_t K, int64_t N, const std::vector<float>& a, int64_t lda,
                             const std::vector<int32_t>& w, const std::vector<int32_t>& wz, const std::vector<float>& ws) {
  float lo = 0.f, hi = 0.f;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) lo = std::min(lo, a[m * lda + k]), hi = std::max(hi, a[m * lda + k]);
  const float s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zf = std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / s)));
  const int32_t z = static_cast<int32_t>(zf);
  std::vector<float> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        float t = a[m * lda + k] / s;
        t = std::min(static_cast<float>(255 - z), std::max(static_cast<float>(-z), t));
        const int32_t q = static_cast<int32_t>(std::nearbyint(t)) + z;
        acc += int64_t{q - z} * (w[k * N + n] - wz[n]);
      }
      y[m * N + n] = static_cast<float>(static_cast<int32_t>(acc)) * (s * ws[n]);
    }
  return y;
}

struct Weights {
  DType type;
  std::vector<uint8_t> bytes;  // [K, N] raw int8 or uint8
  std::vector<uint8_t> zero;   // N raw
  std::vector<int32_t> w, wz;  // as integers
  std::vector<float> scale;
};

Weights make_weights(DType type, int64_t K, int64_t N, bool zero_points, unsigned seed) {
  std::mt19937 gen(seed);
  Weights t{type, {}, {}, {}, {}, {}};
  std::uniform_int_distribution<int> val(type == DType::kInt8 ? -128 : 0, type == DType::kInt8 ? 127 : 255);
  std::uniform_int_distribution<int> zp(type == DType::kInt8 ? -20 : 100, type == DType::kInt8 ? 20 : 150);
  std::uniform_real_distribution<float> sc(0.001f, 0.05f);
  for (int64_t i = 0; i < K * N; ++i) {
    const int v = val(gen);
    t.bytes.push_back(static_cast<uint8_t>(v));
    t.w.push_back(v);
  }
  for (int64_t n = 0; n < N; ++n) {
    const int z = zero_points ? zp(gen) : 0;
    t.zero.push_back(static_cast<uint8_t>(z));
    t.wz.push_back(z);
    t.scale.push_back(sc(gen));
  }
  return t;
}

void expect_bitwise(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << what << " element " << i << ": " << got[i] << " vs " << want[i];
}

TEST(Uint8DynamicProduct, EveryPathMatchesTheFormulaBitForBit) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.3f, 1.5f);  // off-centre: a zero point away from 128
  const std::vector<simd::Isa> levels = {simd::Isa::kScalar, simd::Isa::kAvx2, simd::Isa::kAvx512};
  struct Case {
    DType type;
    bool zero_points;
  };
  for (const Case c : {Case{DType::kInt8, false}, Case{DType::kInt8, true}, Case{DType::kUint8, true}}) {
    for (int64_t K : {1, 3, 17, 130}) {
      for (int64_t N : {1, 5, 64, 65, 130}) {
        const Weights w = make_weights(c.type, K, N, c.zero_points, static_cast<unsigned>(K * 131 + N));
        const Uint8DynamicProduct p = Uint8DynamicProduct::make(c.type, w.bytes.data(), K, N, w.scale.data(), w.zero.data());
        for (int64_t M : {1, 3, 9}) {
          const int64_t lda = K + 3;
          std::vector<float> a(static_cast<size_t>(M * lda), 1e30f);  // the gaps must not be read
          for (int64_t m = 0; m < M; ++m)
            for (int64_t k = 0; k < K; ++k) a[m * lda + k] = dist(gen);
          const std::vector<float> want = reference(M, K, N, a, lda, w.w, w.wz, w.scale);
          std::vector<char> scratch(p.scratch_bytes(M));
          for (simd::Isa isa : levels) {
            if (static_cast<int>(isa) > static_cast<int>(simd::detected_isa())) continue;
            simd::ScopedIsa level(isa);
            std::vector<float> y(static_cast<size_t>(M * N), -7.f);
            p.run(M, a.data(), lda, y.data(), scratch.data());
            expect_bitwise(y, want, std::string(dtype_name(c.type)) + (c.zero_points ? " zp" : "") + " " + simd::isa_name(isa) +
                                        " M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N));
          }
        }
      }
    }
  }
}

// A constant A (one value, so the range is [0, v] or [v, 0]) and an all-zero A (scale 1): the
// degenerate ranges; and the threaded split gives the unthreaded bits.
TEST(Uint8DynamicProduct, DegenerateRangesAndThreads) {
  const int64_t K = 40, N = 200;
  const Weights w = make_weights(DType::kInt8, K, N, false, 3);
  const Uint8DynamicProduct p = Uint8DynamicProduct::make(DType::kInt8, w.bytes.data(), K, N, w.scale.data(), w.zero.data());
  std::vector<char> scratch(p.scratch_bytes(2));
  for (float v : {0.f, 0.75f, -2.5f}) {
    const std::vector<float> a(static_cast<size_t>(2 * K), v);
    std::vector<float> y(static_cast<size_t>(2 * N));
    p.run(2, a.data(), K, y.data(), scratch.data());
    expect_bitwise(y, reference(2, K, N, a, K, w.w, w.wz, w.scale), "constant " + std::to_string(v));
  }
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> a(static_cast<size_t>(2 * K));
  for (float& v : a) v = dist(gen);
  std::vector<float> one(static_cast<size_t>(2 * N)), two(one.size());
  p.run(2, a.data(), K, one.data(), scratch.data());
  ThreadPool pool(2);
  {
    ScopedThreadPool use(&pool);
    p.run(2, a.data(), K, two.data(), scratch.data());
  }
  expect_bitwise(two, one, "2 threads");
}

TEST(Uint8DynamicProduct, NanOrInfInAMakesEveryOutputNan) {
  const int64_t K = 8, N = 3;
  for (DType type : {DType::kInt8, DType::kUint8}) {
    const Weights w = make_weights(type, K, N, type == DType::kUint8, 9);
    const Uint8DynamicProduct p = Uint8DynamicProduct::make(type, w.bytes.data(), K, N, w.scale.data(), w.zero.data());
    std::vector<char> scratch(p.scratch_bytes(2));
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      std::vector<float> a(static_cast<size_t>(2 * K), 0.5f);
      a[11] = bad;
      std::vector<float> y(static_cast<size_t>(2 * N), 0.f);
      p.run(2, a.data(), K, y.data(), scratch.data());
      for (float v : y) EXPECT_TRUE(std::isnan(v)) << dtype_name(type) << " " << bad;
    }
  }
}

}  // namespace
}  // namespace sdx::cpu
