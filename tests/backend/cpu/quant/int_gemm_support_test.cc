// The pieces the integer GEMMs share (backend/cpu/quant/int_gemm_support.h): the row maximum on the AVX2
// path equals the portable one on every tail length and with Inf/NaN/negative zero anywhere; the row scale
// rule; the path choice follows the SIMD level.
#include "backend/cpu/quant/int_gemm_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/simd/isa.h"

namespace sdx::cpu::detail {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

TEST(IntGemmSupport, RowAmaxBitsSameOnEveryPath) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-5.f, 5.f);
  const float specials[] = {std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -0.f,
                            1e30f,
                            -1e30f,
                            std::numeric_limits<float>::denorm_min()};
  for (IntGemmIsa isa : {IntGemmIsa::kPortable, IntGemmIsa::kAvx2, IntGemmIsa::kAvx512Vnni}) {
    if (!int_gemm_isa_supported(isa)) continue;
    for (int64_t K = 0; K <= 40; ++K) {
      std::vector<float> x(static_cast<size_t>(K) + 8, std::numeric_limits<float>::quiet_NaN());  // NaN past K
      for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(k)] = dist(rng);
      uint32_t want = 0;
      for (int64_t k = 0; k < K; ++k) want = std::max(want, bits_of(std::fabs(x[static_cast<size_t>(k)])));
      EXPECT_EQ(row_amax_bits(isa, x.data(), K), want) << int_gemm_isa_name(isa) << " K=" << K;
      for (float sp : specials) {
        for (int64_t at = 0; at < K; at += 7) {
          std::vector<float> y = x;
          y[static_cast<size_t>(at)] = sp;
          uint32_t w = 0;
          for (int64_t k = 0; k < K; ++k) w = std::max(w, bits_of(y[static_cast<size_t>(k)]) & 0x7fffffffu);
          EXPECT_EQ(row_amax_bits(isa, y.data(), K), w) << int_gemm_isa_name(isa) << " K=" << K << " at " << at;
        }
      }
    }
  }
}

TEST(IntGemmSupport, RowScale) {
  EXPECT_TRUE(std::isnan(row_scale(bits_of(std::numeric_limits<float>::infinity()), 127.f)));
  EXPECT_TRUE(std::isnan(row_scale(bits_of(std::numeric_limits<float>::quiet_NaN()), 32767.f)));
  EXPECT_EQ(row_scale(0, 127.f), 1.f);                                                    // zero row
  EXPECT_EQ(row_scale(bits_of(std::numeric_limits<float>::denorm_min()), 32767.f), 1.f);  // underflows to 0
  EXPECT_EQ(row_scale(bits_of(2.f), 127.f), 2.f / 127.f);
  EXPECT_EQ(row_scale(bits_of(3.5f), 32767.f), 3.5f / 32767.f);
  const float dn = std::numeric_limits<float>::denorm_min() * 1e6f;  // s_x itself denormal
  EXPECT_EQ(row_scale(bits_of(dn), 32767.f), dn / 32767.f);
  EXPECT_GT(row_scale(bits_of(dn), 32767.f), 0.f);
}

TEST(IntGemmSupport, ActivePathFollowsTheSimdLevel) {
  {
    simd::ScopedIsa scalar(simd::Isa::kScalar);
    EXPECT_EQ(int_gemm_active_isa(), IntGemmIsa::kPortable);
  }
  const IntGemmIsa active = int_gemm_active_isa();
  EXPECT_TRUE(int_gemm_isa_supported(active));
  EXPECT_TRUE(int_gemm_isa_supported(IntGemmIsa::kPortable));
  EXPECT_STREQ(int_gemm_isa_name(IntGemmIsa::kAvx512Vnni), "avx512vnni");
}

}  // namespace
}  // namespace sdx::cpu::detail
