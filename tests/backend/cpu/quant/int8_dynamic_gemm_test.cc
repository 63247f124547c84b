// The dynamically quantized int8 kernel (backend/cpu/quant/int8_dynamic_gemm.h): every path (portable, AVX2,
// AVX-512 VNNI; a path the CPU lacks is skipped) against a reference written from the header's contract
// (bit for bit: the integer sums are exact, so the float formula must come out identical) and within 2 ulp
// of the same product in double precision, on odd sizes, strided operands, special rows (zero, NaN/Inf,
// huge, tiny, denormal) and extreme weights; the threaded split, the epilogue's ranges, and rows independent
// of M.
#include "backend/cpu/quant/int8_dynamic_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/simd/isa.h"
#include "backend/cpu/threading/thread_pool.h"
#include "int_gemm_checks.h"

namespace sdx::cpu {
namespace {

using detail::Int8DynamicIsa;
using test::Epilogue;
using test::make_weights;
using test::make_x;
using test::TestWeights;
using test::expect_chunks_cover_columns_once;
using test::expect_rows_independent_of_m;

const char* isa_label(Int8DynamicIsa isa) {
  switch (isa) {
    case Int8DynamicIsa::kPortable: return "portable";
    case Int8DynamicIsa::kAvx2: return "avx2";
    case Int8DynamicIsa::kAvx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// The contract of int8_dynamic_gemm.h written independently of the library: quantized row and its scale.
struct RefRow {
  float s;
  std::vector<int> q;
};

RefRow ref_quantize(const float* x, int64_t K) {
  RefRow r{0.f, std::vector<int>(static_cast<size_t>(K), 0)};
  float amax = 0.f;
  bool finite = true;
  for (int64_t k = 0; k < K; ++k) {
    if (!std::isfinite(x[k])) finite = false;
    else amax = std::max(amax, std::fabs(x[k]));
  }
  if (!finite) {
    r.s = std::numeric_limits<float>::quiet_NaN();
    return r;
  }
  r.s = amax / 127.f;
  if (r.s == 0.f) r.s = 1.f;
  for (int64_t k = 0; k < K; ++k) {
    const float t = std::clamp(x[k] / r.s, -127.f, 127.f);
    r.q[static_cast<size_t>(k)] = static_cast<int>(std::nearbyint(t));
  }
  return r;
}

// y per the contract (exact: expected bit for bit) and the same product in double precision (NaN where it
// is not comparable).
void reference(int64_t M, int64_t K, const std::vector<float>& x, int64_t ldx, const TestWeights& w,
               std::vector<float>* exact, std::vector<double>* wide) {
  exact->assign(static_cast<size_t>(M * w.N), 0.f);
  wide->assign(static_cast<size_t>(M * w.N), 0.0);
  for (int64_t m = 0; m < M; ++m) {
    const RefRow r = ref_quantize(x.data() + m * ldx, K);
    for (int64_t n = 0; n < w.N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t{r.q[static_cast<size_t>(k)]} * w.w[static_cast<size_t>(k * w.ldw + n)];
      const float s = r.s * w.scale[static_cast<size_t>(n)];
      (*exact)[static_cast<size_t>(m * w.N + n)] = static_cast<float>(acc) * s;
      // When s_x * scale is subnormal in float, the contract's own rounding loses the relative accuracy:
      // no double-precision comparison there (NaN skips it), only the bitwise one.
      (*wide)[static_cast<size_t>(m * w.N + n)] =
          std::fabs(s) < std::numeric_limits<float>::min()
              ? std::numeric_limits<double>::quiet_NaN()
              : static_cast<double>(acc) * static_cast<double>(r.s) * static_cast<double>(w.scale[static_cast<size_t>(n)]);
    }
  }
}

// y [M, N] (row stride ldy; the padding keeps its sentinel) on one path, through the detail entry points.
std::vector<float> run_path(Int8DynamicIsa isa, int64_t M, int64_t K, const std::vector<float>& x, int64_t ldx,
                            const Int8DynamicWeights& pw, int64_t ldy) {
  std::vector<float> y(static_cast<size_t>(M * ldy), -7.f);
  std::vector<char> scratch(int8_dynamic_scratch_bytes(M, K) + 1);
  // An odd scratch address: the kernel aligns it itself.
  const Int8DynamicRows rows = detail::int8_dynamic_quantize(isa, M, K, x.data(), ldx, scratch.data() + 1);
  detail::int8_dynamic_blocks(isa, M, rows, pw, y.data(), ldy, 0, pw.blocks());
  return y;
}

// Checks y [M, N] (row stride ldy) against the references: bit for bit with `exact`, within 2 ulp of `wide`,
// and the row padding untouched. Returns the number of mismatches (reports the first few).
int check(const std::vector<float>& y, int64_t M, int64_t N, int64_t ldy, const std::vector<float>& exact,
          const std::vector<double>& wide, const std::string& what) {
  int bad = 0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < ldy; ++n) {
      const float got = y[static_cast<size_t>(m * ldy + n)];
      if (n >= N) {
        if (got != -7.f && bad++ < 3) ADD_FAILURE() << what << ": padding written at m=" << m << " n=" << n;
        continue;
      }
      const float want = exact[static_cast<size_t>(m * N + n)];
      const bool same = bits_of(got) == bits_of(want) || (std::isnan(got) && std::isnan(want));
      if (!same && bad++ < 3) ADD_FAILURE() << what << ": m=" << m << " n=" << n << " got " << got << " want " << want;
      const double ref = wide[static_cast<size_t>(m * N + n)];
      if (std::isfinite(ref) && std::isfinite(got)) {
        const double ulp = std::ldexp(1.0, std::max(std::ilogb(std::max(std::fabs(ref), 1e-300)) - 23, -149));
        if (std::fabs(got - ref) > 2 * ulp && bad++ < 3)
          ADD_FAILURE() << what << ": m=" << m << " n=" << n << " got " << got << " double reference " << ref;
      }
    }
  }
  return bad;
}

class Int8DynamicPath : public ::testing::TestWithParam<Int8DynamicIsa> {
 protected:
  void SetUp() override {
    if (!detail::int8_dynamic_isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU lacks the " << isa_label(GetParam()) << " path";
  }
};

TEST_P(Int8DynamicPath, OddSizesMatchTheContractBitForBit) {
  const Int8DynamicIsa isa = GetParam();
  int failures = 0;
  unsigned seed = 1;
  for (int64_t K : {1, 3, 4, 5, 63, 64, 65, 257}) {
    for (int64_t N : {1, 7, 15, 16, 17, 63, 64, 65, 130, 256}) {
      const TestWeights w = make_weights(K, N, /*pad=*/3, seed++);
      const Int8DynamicWeights pw(w.w.data(), w.ldw, K, N, w.scale.data());
      for (int64_t M : {1, 2, 3, 5, 8, 13}) {
        const int64_t ldx = K + 5, ldy = N + 2;
        const std::vector<float> x = make_x(M, K, ldx, seed++);
        std::vector<float> exact;
        std::vector<double> wide;
        reference(M, K, x, ldx, w, &exact, &wide);
        const std::vector<float> y = run_path(isa, M, K, x, ldx, pw, ldy);
        failures += check(y, M, N, ldy, exact, wide,
                          std::string(isa_label(isa)) + " M=" + std::to_string(M) + " K=" + std::to_string(K) +
                              " N=" + std::to_string(N));
        if (failures > 10) return;
      }
    }
  }
}

TEST_P(Int8DynamicPath, QuantizationMatchesPortable) {
  const int64_t M = 6, ldx = 300;
  for (int64_t K : {1, 7, 8, 9, 31, 32, 33, 75, 257}) {
    std::vector<float> x = make_x(M, K, ldx, 7);
    // Row 1 is zero, row 2 has an Inf, row 3 a NaN, row 4 ties (x / s_x = i + 0.5), row 5 is denormal.
    for (int64_t k = 0; k < K; ++k) {
      x[static_cast<size_t>(ldx + k)] = 0.f;
      x[static_cast<size_t>(4 * ldx + k)] = k == 0 ? 127.f : static_cast<float>(k % 50) - 24.5f;  // s_x = 1
      x[static_cast<size_t>(5 * ldx + k)] = std::numeric_limits<float>::denorm_min() * static_cast<float>(k * 37 % 1000);
    }
    x[static_cast<size_t>(2 * ldx + K / 2)] = -std::numeric_limits<float>::infinity();
    x[static_cast<size_t>(3 * ldx)] = std::numeric_limits<float>::quiet_NaN();
    std::vector<char> a(int8_dynamic_scratch_bytes(M, K)), b(int8_dynamic_scratch_bytes(M, K));
    const Int8DynamicRows p = detail::int8_dynamic_quantize(Int8DynamicIsa::kPortable, M, K, x.data(), ldx, a.data());
    const Int8DynamicRows v = detail::int8_dynamic_quantize(GetParam(), M, K, x.data(), ldx, b.data());
    ASSERT_EQ(p.ldq, v.ldq);
    ASSERT_EQ(p.ldq % 64, 0);
    for (int64_t m = 0; m < M; ++m) {
      const float ps = p.scale[m], vs = v.scale[m];
      EXPECT_TRUE(bits_of(ps) == bits_of(vs) || (std::isnan(ps) && std::isnan(vs))) << "K=" << K << " m=" << m;
      const RefRow r = ref_quantize(x.data() + m * ldx, K);
      EXPECT_TRUE(bits_of(ps) == bits_of(r.s) || (std::isnan(ps) && std::isnan(r.s))) << "K=" << K << " m=" << m;
      for (int64_t k = 0; k < p.ldq; ++k) {
        const int want = k < K ? r.q[static_cast<size_t>(k)] + 128 : 128;
        ASSERT_EQ(p.q[m * p.ldq + k], want) << "K=" << K << " m=" << m << " k=" << k;
        ASSERT_EQ(v.q[m * v.ldq + k], want) << "K=" << K << " m=" << m << " k=" << k;
      }
    }
    EXPECT_EQ(p.scale[1], 1.f);  // zero row
    EXPECT_TRUE(std::isnan(p.scale[2]) && std::isnan(p.scale[3]));
  }
}

TEST_P(Int8DynamicPath, SpecialRows) {
  const Int8DynamicIsa isa = GetParam();
  const int64_t M = 8, K = 70, N = 90, ldx = K + 1, ldy = N;
  const TestWeights w = make_weights(K, N, 0, 11);
  const Int8DynamicWeights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  std::vector<float> x = make_x(M, K, ldx, 12);
  const float dm = std::numeric_limits<float>::denorm_min();
  for (int64_t k = 0; k < K; ++k) {
    x[static_cast<size_t>(0 * ldx + k)] = 0.f;                                  // zero row
    x[static_cast<size_t>(1 * ldx + k)] *= 1e34f;                               // huge
    x[static_cast<size_t>(2 * ldx + k)] *= 1e-35f;                              // tiny: s_x * scale subnormal
    x[static_cast<size_t>(3 * ldx + k)] = dm * static_cast<float>(k % 3);       // amax / 127 underflows to 0
    x[static_cast<size_t>(4 * ldx + k)] = dm * static_cast<float>(1000 - k);    // denormal, s_x denormal
  }
  x[static_cast<size_t>(5 * ldx + 3)] = std::numeric_limits<float>::infinity();
  x[static_cast<size_t>(6 * ldx + K - 1)] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> exact;
  std::vector<double> wide;
  reference(M, K, x, ldx, w, &exact, &wide);
  const std::vector<float> y = run_path(isa, M, K, x, ldx, pw, ldy);
  check(y, M, N, ldy, exact, wide, isa_label(isa));
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(y[static_cast<size_t>(n)], 0.f);
    EXPECT_EQ(y[static_cast<size_t>(3 * ldy + n)], 0.f);
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(5 * ldy + n)]));
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(6 * ldy + n)]));
    EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(7 * ldy + n)]));
  }
}

TEST_P(Int8DynamicPath, ExtremeWeightsAndLargestK) {
  const Int8DynamicIsa isa = GetParam();
  // Every product at its extreme: w = +-127, x at +-amax (q = +-127), u8 = 255 or 1; at K = kInt8DynamicMaxK the
  // u8 sums reach 255 * 127 * K ~ 1.06e9 and the exact sums 127 * 127 * K ~ 5.3e8.
  for (int64_t K : {int64_t{64}, int64_t{1000}, kInt8DynamicMaxK}) {
    const int64_t M = 3, N = 20;
    TestWeights w{K, N, N, std::vector<int8_t>(static_cast<size_t>(K * N)), std::vector<float>(N, 1.f)};
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) w.w[static_cast<size_t>(k * N + n)] = (n % 3 == 0 || (n % 3 == 2 && k % 2)) ? 127 : -127;
    std::vector<float> x(static_cast<size_t>(M * K));
    for (int64_t k = 0; k < K; ++k) {
      x[static_cast<size_t>(k)] = 1.f;                         // q = 127 everywhere
      x[static_cast<size_t>(K + k)] = -3.f;                    // q = -127 everywhere
      x[static_cast<size_t>(2 * K + k)] = k % 2 ? 5.f : -5.f;  // alternating
    }
    const Int8DynamicWeights pw(w.w.data(), w.ldw, K, N, w.scale.data());
    std::vector<float> exact;
    std::vector<double> wide;
    reference(M, K, x, K, w, &exact, &wide);
    const std::vector<float> y = run_path(isa, M, K, x, K, pw, N);
    check(y, M, N, N, exact, wide, std::string(isa_label(isa)) + " K=" + std::to_string(K));
    // Column 0 (all +127) with row 0 (all q = 127): 127 * 127 * K, exactly representable up to 2^24.
    if (K <= 1000) {
      EXPECT_EQ(y[0], static_cast<float>(127 * 127 * K) * (1.f / 127.f));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Int8Dynamic, Int8DynamicPath,
                         ::testing::Values(Int8DynamicIsa::kPortable, Int8DynamicIsa::kAvx2,
                                           Int8DynamicIsa::kAvx512Vnni),
                         [](const ::testing::TestParamInfo<Int8DynamicIsa>& info) {
                           return std::string(isa_label(info.param));
                         });

// The public entry point (active path) on a shape split over several chunks: the same bits with and without
// a pool, and the epilogue sees each chunk's columns once, after they are final for every row.
TEST(Int8DynamicGemm, ThreadedSplitMatchesUnthreadedAndEpilogueCoversColumnsOnce) {
  const int64_t M = 3, K = 256, N = 1000, ldx = K + 4, ldy = N + 3;
  const TestWeights w = make_weights(K, N, 5, 21);
  const Int8DynamicWeights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  const std::vector<float> x = make_x(M, K, ldx, 22);
  std::vector<float> exact;
  std::vector<double> wide;
  reference(M, K, x, ldx, w, &exact, &wide);
  std::vector<char> scratch(int8_dynamic_scratch_bytes(M, K));

  std::vector<float> y1(static_cast<size_t>(M * ldy), -7.f);
  int calls = 0;
  int8_dynamic_gemm(M, K, x.data(), ldx, pw, y1.data(), ldy, scratch.data(), [&](int64_t n0, int64_t n1) {
    EXPECT_EQ(n0, 0);
    EXPECT_EQ(n1, N);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  check(y1, M, N, ldy, exact, wide, "unthreaded");

  ThreadPool pool(2);
  ScopedThreadPool bind(&pool);
  ASSERT_GT(pw.blocks(), detail::int8_dynamic_grain(K));  // more than one chunk
  expect_chunks_cover_columns_once(M, N, ldy, kInt8DynamicBlock, y1, [&](float* y, const Epilogue& epilogue) {
    int8_dynamic_gemm(M, K, x.data(), ldx, pw, y, ldy, scratch.data(), epilogue);
  }, "two threads");
}

TEST(Int8DynamicGemm, RowsDoNotDependOnM) {
  const int64_t K = 200, N = 150, ldx = K;
  const TestWeights w = make_weights(K, N, 0, 31);
  const Int8DynamicWeights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  for (int64_t M : {5, 13}) {
    const std::vector<float> x = make_x(M, K, ldx, 32);
    std::vector<char> scratch(int8_dynamic_scratch_bytes(M, K));
    expect_rows_independent_of_m(M, N, ldx, x, [&](int64_t rows, const float* xr, float* y) {
      int8_dynamic_gemm(rows, K, xr, ldx, pw, y, N, scratch.data(), [](int64_t, int64_t) {});
    });
  }
}

TEST(Int8DynamicGemm, WeightsOwnTheirCopies) {
  const int64_t K = 33, N = 70;
  std::vector<float> exact;
  std::vector<double> wide;
  const std::vector<float> x = make_x(2, K, K, 41);
  Int8DynamicWeights pw;
  EXPECT_TRUE(pw.empty());
  {
    TestWeights w = make_weights(K, N, 0, 42);
    reference(2, K, x, K, w, &exact, &wide);
    pw = Int8DynamicWeights(w.w.data(), w.ldw, K, N, w.scale.data());
    std::fill(w.w.begin(), w.w.end(), int8_t{5});
    std::fill(w.scale.begin(), w.scale.end(), 9.f);
  }
  EXPECT_FALSE(pw.empty());
  EXPECT_EQ(pw.K(), K);
  EXPECT_EQ(pw.N(), N);
  std::vector<float> y(static_cast<size_t>(2 * N));
  std::vector<char> scratch(int8_dynamic_scratch_bytes(2, K));
  int8_dynamic_gemm(2, K, x.data(), K, pw, y.data(), N, scratch.data(), [](int64_t, int64_t) {});
  check(y, 2, N, N, exact, wide, "after the sources changed");
}

TEST(Int8DynamicGemm, AppliesOnlyWhileInt32IsExact) {
  EXPECT_TRUE(int8_dynamic_applies(1));
  EXPECT_TRUE(int8_dynamic_applies(4096));
  EXPECT_TRUE(int8_dynamic_applies(kInt8DynamicMaxK));
  EXPECT_FALSE(int8_dynamic_applies(0));
  EXPECT_FALSE(int8_dynamic_applies(kInt8DynamicMaxK + 1));
  EXPECT_FALSE(int8_dynamic_applies(int64_t{1} << 40));
  EXPECT_LT(static_cast<double>(kInt8DynamicMaxK) * 255 * 127, std::ldexp(1.0, 31));
}

TEST(Int8DynamicGemm, ActivePathFollowsTheSimdLevel) {
  {
    simd::ScopedIsa scalar(simd::Isa::kScalar);
    EXPECT_EQ(detail::int8_dynamic_active_isa(), Int8DynamicIsa::kPortable);
  }
  const Int8DynamicIsa active = detail::int8_dynamic_active_isa();
  EXPECT_TRUE(detail::int8_dynamic_isa_supported(active));
  if (simd::active_isa() == simd::Isa::kAvx512) {
    EXPECT_EQ(active == Int8DynamicIsa::kAvx512Vnni, int8_dynamic_vnni());
  }
}

}  // namespace
}  // namespace sdx::cpu
