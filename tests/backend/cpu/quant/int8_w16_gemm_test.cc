// The int8-weight GEMM with X rounded to int16 (backend/cpu/quant/int8_w16_gemm.h): every path (portable,
// AVX2, AVX-512 VNNI; a path the CPU lacks is skipped) against a reference written from the header's
// contract (bit for bit: the integer sums are exact, so the float formula must come out identical) and the
// vector paths against the portable one, on odd sizes and strided operands; within 2 ulp of the same
// product in double precision, and the X rounding within 1/65534 of max |x| (so the result is within a
// stated bound of the float product); special rows (zero, NaN/Inf, denormal), sums past int32 and the
// int32 chunk at its limit; the threaded split, the epilogue's ranges, and rows independent of M.
#include "backend/cpu/quant/int8_w16_gemm.h"

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

using detail::IntGemmIsa;
using test::Epilogue;
using test::make_weights;
using test::make_x;
using test::TestWeights;
using test::expect_chunks_cover_columns_once;
using test::expect_rows_independent_of_m;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

bool same_bits(float a, float b) { return bits_of(a) == bits_of(b) || (std::isnan(a) && std::isnan(b)); }

// The contract of int8_w16_gemm.h written independently of the library: quantized row and its scale.
struct RefRow {
  float s;
  std::vector<int> q;
};

RefRow ref_quantize(const float* x, int64_t K) {
  RefRow r{0.f, std::vector<int>(static_cast<size_t>(K), 0)};
  float amax = 0.f;
  bool finite = true;
  for (int64_t k = 0; k < K; ++k) {
    if (!std::isfinite(x[k]))
      finite = false;
    else
      amax = std::max(amax, std::fabs(x[k]));
  }
  if (!finite) {
    r.s = std::numeric_limits<float>::quiet_NaN();
    return r;
  }
  r.s = amax / 32767.f;
  if (r.s == 0.f) r.s = 1.f;
  for (int64_t k = 0; k < K; ++k) {
    const float t = std::clamp(x[k] / r.s, -32767.f, 32767.f);
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
      for (int64_t k = 0; k < K; ++k)
        acc += int64_t{r.q[static_cast<size_t>(k)]} * w.w[static_cast<size_t>(k * w.ldw + n)];
      const float s = r.s * w.scale[static_cast<size_t>(n)];
      (*exact)[static_cast<size_t>(m * w.N + n)] = static_cast<float>(acc) * s;
      // When s_x * scale is subnormal in float, the contract's own rounding loses the relative accuracy:
      // no double-precision comparison there (NaN skips it), only the bitwise one.
      (*wide)[static_cast<size_t>(m * w.N + n)] = std::fabs(s) < std::numeric_limits<float>::min()
                                                      ? std::numeric_limits<double>::quiet_NaN()
                                                      : static_cast<double>(acc) * static_cast<double>(r.s) *
                                                            static_cast<double>(w.scale[static_cast<size_t>(n)]);
    }
  }
}

// y [M, N] (row stride ldy; the padding keeps its sentinel) on one path, through the detail entry points.
std::vector<float> run_path(IntGemmIsa isa, int64_t M, int64_t K, const std::vector<float>& x, int64_t ldx,
                            const Int8W16Weights& pw, int64_t ldy) {
  std::vector<float> y(static_cast<size_t>(M * ldy), -7.f);
  std::vector<char> scratch(int8_w16_scratch_bytes(M, K) + 1);
  // An odd scratch address: the kernel aligns it itself.
  const Int8W16Rows rows = detail::int8_w16_quantize(isa, M, K, x.data(), ldx, scratch.data() + 1);
  detail::int8_w16_blocks(isa, M, rows, pw, y.data(), ldy, 0, pw.blocks());
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
      if (!same_bits(got, want) && bad++ < 3)
        ADD_FAILURE() << what << ": m=" << m << " n=" << n << " got " << got << " want " << want;
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

class Int8W16Path : public ::testing::TestWithParam<IntGemmIsa> {
 protected:
  void SetUp() override {
    if (!detail::int_gemm_isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU lacks the " << detail::int_gemm_isa_name(GetParam()) << " path";
  }
};

// Every shape of the sweep: the path bit for bit against the contract's reference and against the portable
// path, with ldx != K, ldw != N and ldy != N. K = 1000..4096 take several int32 chunks (kInt8W16ChunkK).
TEST_P(Int8W16Path, SweepMatchesContractAndPortableBitForBit) {
  const IntGemmIsa isa = GetParam();
  int failures = 0;
  unsigned seed = 1;
  for (int64_t K : {1, 2, 3, 7, 64, 255, 256, 257, 1000, 1024, 4096}) {
    for (int64_t N : {1, 7, 16, 63, 64, 65, 200, 256}) {
      const TestWeights w = make_weights(K, N, /*pad=*/3, seed++);
      const Int8W16Weights pw(w.w.data(), w.ldw, K, N, w.scale.data());
      for (int64_t M : {1, 2, 3, 5, 8, 9}) {
        const int64_t ldx = K + 5, ldy = N + 2;
        const std::vector<float> x = make_x(M, K, ldx, seed++);
        const std::string what = std::string(detail::int_gemm_isa_name(isa)) + " M=" + std::to_string(M) +
                                 " K=" + std::to_string(K) + " N=" + std::to_string(N);
        std::vector<float> exact;
        std::vector<double> wide;
        reference(M, K, x, ldx, w, &exact, &wide);
        const std::vector<float> y = run_path(isa, M, K, x, ldx, pw, ldy);
        failures += check(y, M, N, ldy, exact, wide, what);
        if (isa != IntGemmIsa::kPortable) {
          const std::vector<float> p = run_path(IntGemmIsa::kPortable, M, K, x, ldx, pw, ldy);
          if (std::memcmp(y.data(), p.data(), y.size() * sizeof(float)) != 0 && failures++ < 10)
            ADD_FAILURE() << what << ": differs from the portable path";
        }
        if (failures > 10) return;
      }
    }
  }
}

TEST_P(Int8W16Path, QuantizationMatchesContract) {
  const int64_t M = 6, ldx = 300;
  for (int64_t K : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 75, 257}) {
    std::vector<float> x = make_x(M, K, ldx, 7);
    // Row 1 is zero, row 2 has an Inf, row 3 a NaN, row 4 ties (x / s_x = i + 0.5), row 5 is denormal.
    for (int64_t k = 0; k < K; ++k) {
      x[static_cast<size_t>(ldx + k)] = 0.f;
      x[static_cast<size_t>(4 * ldx + k)] = k == 0 ? 32767.f : static_cast<float>(k % 50) - 24.5f;  // s_x = 1
      x[static_cast<size_t>(5 * ldx + k)] =
          std::numeric_limits<float>::denorm_min() * static_cast<float>(k * 37 % 1000);
    }
    x[static_cast<size_t>(2 * ldx + K / 2)] = -std::numeric_limits<float>::infinity();
    x[static_cast<size_t>(3 * ldx)] = std::numeric_limits<float>::quiet_NaN();
    std::vector<char> scratch(int8_w16_scratch_bytes(M, K));
    const Int8W16Rows v = detail::int8_w16_quantize(GetParam(), M, K, x.data(), ldx, scratch.data());
    ASSERT_EQ(v.ldq % 32, 0);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(v.q) % 64, 0u);
    for (int64_t m = 0; m < M; ++m) {
      const RefRow r = ref_quantize(x.data() + m * ldx, K);
      EXPECT_TRUE(same_bits(v.scale[m], r.s)) << "K=" << K << " m=" << m;
      for (int64_t k = 0; k < v.ldq; ++k) {
        const int want = k < K ? r.q[static_cast<size_t>(k)] : 0;
        ASSERT_EQ(v.q[m * v.ldq + k], want) << "K=" << K << " m=" << m << " k=" << k;
      }
    }
    EXPECT_EQ(v.scale[1], 1.f);  // zero row
    EXPECT_TRUE(std::isnan(v.scale[2]) && std::isnan(v.scale[3]));
    if (K > 2) {
      EXPECT_EQ(v.q[4 * v.ldq + 0], 32767);
      EXPECT_EQ(v.q[4 * v.ldq + 1], -24);  // -23.5 rounds half to even
      EXPECT_EQ(v.q[4 * v.ldq + 2], -22);  // -22.5 rounds half to even
    }
  }
}

TEST_P(Int8W16Path, SpecialRows) {
  const IntGemmIsa isa = GetParam();
  const int64_t M = 9, K = 70, N = 90, ldx = K + 1, ldy = N;
  const TestWeights w = make_weights(K, N, 0, 11);
  const Int8W16Weights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  std::vector<float> x = make_x(M, K, ldx, 12);
  const float dm = std::numeric_limits<float>::denorm_min();
  for (int64_t k = 0; k < K; ++k) {
    x[static_cast<size_t>(0 * ldx + k)] = 0.f;                                 // zero row
    x[static_cast<size_t>(1 * ldx + k)] *= 1e34f;                              // huge
    x[static_cast<size_t>(2 * ldx + k)] *= 1e-35f;                             // tiny: s_x * scale subnormal
    x[static_cast<size_t>(3 * ldx + k)] = dm * static_cast<float>(k % 3);      // amax / 32767 underflows to 0
    x[static_cast<size_t>(4 * ldx + k)] = dm * static_cast<float>(70000 - k);  // denormal only, s_x denormal
    x[static_cast<size_t>(8 * ldx + k)] = -0.f;                                // negative zeros
  }
  x[static_cast<size_t>(5 * ldx + 3)] = std::numeric_limits<float>::infinity();
  x[static_cast<size_t>(6 * ldx + K - 1)] = std::numeric_limits<float>::quiet_NaN();
  x[static_cast<size_t>(7 * ldx)] = -std::numeric_limits<float>::infinity();
  std::vector<float> exact;
  std::vector<double> wide;
  reference(M, K, x, ldx, w, &exact, &wide);
  const std::vector<float> y = run_path(isa, M, K, x, ldx, pw, ldy);
  check(y, M, N, ldy, exact, wide, detail::int_gemm_isa_name(isa));
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(y[static_cast<size_t>(n)], 0.f);
    EXPECT_EQ(y[static_cast<size_t>(3 * ldy + n)], 0.f);
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(5 * ldy + n)]));
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(6 * ldy + n)]));
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(7 * ldy + n)]));
    EXPECT_EQ(y[static_cast<size_t>(8 * ldy + n)], 0.f);
    EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(1 * ldy + n)]));
    EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(4 * ldy + n)]));
  }
}

// Sums past int32: K = 8192 with every product at its extreme. Row 0: x = +1 everywhere (q = 32767) against
// w = 127 (acc = 8192 * 32767 * 127 ~ 3.4e10); row 1: x = -2 (q = -32767) against w = -128, the largest
// product (+4194176): each int32 chunk of kInt8W16ChunkK values sums to 2147418112, 65535 below 2^31.
TEST_P(Int8W16Path, SumsPastInt32AreExact) {
  const IntGemmIsa isa = GetParam();
  const int64_t M = 3, K = 8192, N = 3;
  TestWeights w{K, N, N, std::vector<int8_t>(static_cast<size_t>(K * N)), std::vector<float>{1.f, 0.5f, 0.25f}};
  for (int64_t k = 0; k < K; ++k) {
    w.w[static_cast<size_t>(k * N + 0)] = 127;
    w.w[static_cast<size_t>(k * N + 1)] = -128;
    w.w[static_cast<size_t>(k * N + 2)] = k % 2 ? 127 : -128;
  }
  std::vector<float> x(static_cast<size_t>(M * K));
  for (int64_t k = 0; k < K; ++k) {
    x[static_cast<size_t>(k)] = 1.f;
    x[static_cast<size_t>(K + k)] = -2.f;
    x[static_cast<size_t>(2 * K + k)] = k % 2 ? 3.f : -3.f;
  }
  const Int8W16Weights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  std::vector<float> exact;
  std::vector<double> wide;
  reference(M, K, x, K, w, &exact, &wide);
  const std::vector<float> y = run_path(isa, M, K, x, K, pw, N);
  check(y, M, N, N, exact, wide, detail::int_gemm_isa_name(isa));
  // The exact values, computed here in int64 and rounded once: y = float(acc) * (s_x * scale).
  auto expect = [&](int64_t m, int64_t n, int64_t acc, float amax) {
    const float s = amax / 32767.f * w.scale[static_cast<size_t>(n)];
    EXPECT_TRUE(same_bits(y[static_cast<size_t>(m * N + n)], static_cast<float>(acc) * s)) << "m=" << m << " n=" << n;
    EXPECT_NEAR(y[static_cast<size_t>(m * N + n)],
                static_cast<double>(acc) * amax / 32767.0 * w.scale[static_cast<size_t>(n)],
                std::fabs(static_cast<double>(acc) * amax / 32767.0) * 3e-7);
  };
  expect(0, 0, K * 32767 * 127, 1.f);
  expect(0, 1, K * 32767 * -128, 1.f);
  expect(1, 1, K * 32767 * 128, 2.f);  // every chunk's int32 sum at 2147418112
  expect(1, 0, K * -32767 * 127, 2.f);
  expect(2, 2, K / 2 * 32767 * 127 + K / 2 * 32767 * 128, 3.f);
  EXPECT_GT(int64_t{kInt8W16ChunkK} * 32767 * 128, int64_t{INT32_MAX} - 65536);  // the chunk is at its limit
}

// Accuracy: y is within 2 ulp of the exact sum of q * w scaled (checked in the sweep), and X's rounding
// error per value is at most half a quantization step plus the float division's rounding (|x / s_x| <=
// 32767 carries at most 32767 * 2^-24 < 2^-9 of error): |q s_x - x| <= (1/2 + 2^-9) s_x ~= max|x| / 65273.
// So against the product of the float x with the dequantized weights,
// |y - sum_k x w scale| <= (1/2 + 2^-9) s_x sum_k |w| scale + 2 ulp(y).
TEST_P(Int8W16Path, ErrorAgainstFloatProductIsBounded) {
  const IntGemmIsa isa = GetParam();
  const int64_t M = 4, K = 1024, N = 130;
  const TestWeights w = make_weights(K, N, 0, 51);
  const Int8W16Weights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  std::vector<float> x = make_x(M, K, K, 52);
  for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(3 * K + k)] *= 1e-20f;  // a small row: relative bound
  const std::vector<float> y = run_path(isa, M, K, x, K, pw, N);
  std::vector<char> scratch(int8_w16_scratch_bytes(M, K));
  const Int8W16Rows q = detail::int8_w16_quantize(isa, M, K, x.data(), K, scratch.data());
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x.data() + m * K;
    double amax = 0;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(double(xr[k])));
    const double sx = q.scale[m];
    EXPECT_LE(sx, amax / 32767.0 * (1 + 1e-6));
    double worst_x = 0;
    for (int64_t k = 0; k < K; ++k) worst_x = std::max(worst_x, std::fabs(q.q[m * q.ldq + k] * sx - double(xr[k])));
    const double step_error = (0.5 + 1.0 / 512) * sx * (1 + 1e-6);
    EXPECT_LE(worst_x, step_error) << "m=" << m;
    EXPECT_LE(worst_x, amax / 65273.0) << "m=" << m;  // ~1/32767 of max |x| relative, as promised
    for (int64_t n = 0; n < N; ++n) {
      double dot = 0, abs_w = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double wk = double(w.w[static_cast<size_t>(k * N + n)]) * w.scale[static_cast<size_t>(n)];
        dot += double(xr[k]) * wk;
        abs_w += std::fabs(wk);
      }
      const double got = y[static_cast<size_t>(m * N + n)];
      const double bound = step_error * abs_w + 2 * std::ldexp(std::fabs(got), -23);
      EXPECT_LE(std::fabs(got - dot), bound) << "m=" << m << " n=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Int8W16, Int8W16Path,
                         ::testing::Values(IntGemmIsa::kPortable, IntGemmIsa::kAvx2, IntGemmIsa::kAvx512Vnni),
                         [](const ::testing::TestParamInfo<IntGemmIsa>& info) {
                           return std::string(detail::int_gemm_isa_name(info.param));
                         });

// The public entry point (active path) on shapes split over several chunks: the same bits with a pool of 2
// as without one, and the epilogue sees each chunk's columns once, after they are final for every row.
TEST(Int8W16Gemm, TwoThreadsMatchOneAndEpilogueCoversColumnsOnce) {
  for (int64_t K : {256, 1000}) {
    const int64_t M = 3, N = 1000, ldx = K + 4, ldy = N + 3;
    const TestWeights w = make_weights(K, N, 5, 21);
    const Int8W16Weights pw(w.w.data(), w.ldw, K, N, w.scale.data());
    const std::vector<float> x = make_x(M, K, ldx, 22);
    std::vector<float> exact;
    std::vector<double> wide;
    reference(M, K, x, ldx, w, &exact, &wide);
    std::vector<char> scratch(int8_w16_scratch_bytes(M, K));

    std::vector<float> y1(static_cast<size_t>(M * ldy), -7.f);
    int calls = 0;
    int8_w16_gemm(M, K, x.data(), ldx, pw, y1.data(), ldy, scratch.data(), [&](int64_t n0, int64_t n1) {
      EXPECT_EQ(n0, 0);
      EXPECT_EQ(n1, N);
      ++calls;
    });
    EXPECT_EQ(calls, 1);
    check(y1, M, N, ldy, exact, wide, "one thread K=" + std::to_string(K));

    ThreadPool pool(2);
    ScopedThreadPool bind(&pool);
    ASSERT_GT(pw.blocks(), detail::int8_w16_grain(K));  // more than one chunk
    expect_chunks_cover_columns_once(M, N, ldy, kInt8W16Block, y1, [&](float* y, const Epilogue& epilogue) {
      int8_w16_gemm(M, K, x.data(), ldx, pw, y, ldy, scratch.data(), epilogue);
    }, "two threads K=" + std::to_string(K));
  }
}

TEST(Int8W16Gemm, RowsDoNotDependOnM) {
  const int64_t K = 600, N = 150, ldx = K;
  const TestWeights w = make_weights(K, N, 0, 31);
  const Int8W16Weights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  for (int64_t M : {5, 9}) {
    const std::vector<float> x = make_x(M, K, ldx, 32);
    std::vector<char> scratch(int8_w16_scratch_bytes(M, K));
    expect_rows_independent_of_m(M, N, ldx, x, [&](int64_t rows, const float* xr, float* y) {
      int8_w16_gemm(rows, K, xr, ldx, pw, y, N, scratch.data(), [](int64_t, int64_t) {});
    });
  }
}

TEST(Int8W16Gemm, WeightsOwnTheirCopies) {
  const int64_t K = 33, N = 70;
  std::vector<float> exact;
  std::vector<double> wide;
  const std::vector<float> x = make_x(2, K, K, 41);
  Int8W16Weights pw;
  EXPECT_TRUE(pw.empty());
  {
    TestWeights w = make_weights(K, N, 0, 42);
    reference(2, K, x, K, w, &exact, &wide);
    pw = Int8W16Weights(w.w.data(), w.ldw, K, N, w.scale.data());
    std::fill(w.w.begin(), w.w.end(), int8_t{5});
    std::fill(w.scale.begin(), w.scale.end(), 9.f);
  }
  EXPECT_FALSE(pw.empty());
  EXPECT_EQ(pw.K(), K);
  EXPECT_EQ(pw.N(), N);
  EXPECT_EQ(pw.padded_k(), 34);
  std::vector<float> y(static_cast<size_t>(2 * N));
  std::vector<char> scratch(int8_w16_scratch_bytes(2, K));
  int8_w16_gemm(2, K, x.data(), K, pw, y.data(), N, scratch.data(), [](int64_t, int64_t) {});
  check(y, 2, N, N, exact, wide, "after the sources changed");
}

TEST(Int8W16Gemm, PackingLayout) {
  const int64_t K = 5, N = 70;
  const TestWeights w = make_weights(K, N, 2, 61);
  const Int8W16Weights pw(w.w.data(), w.ldw, K, N, w.scale.data());
  ASSERT_EQ(pw.blocks(), 2);
  ASSERT_EQ(pw.padded_k(), 6);
  for (int64_t b = 0; b < pw.blocks(); ++b) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pw.block(b)) % 64, 0u);
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t c = 0; c < kInt8W16Block; ++c)
        for (int64_t j = 0; j < 2; ++j) {
          const int64_t k = 2 * p + j, n = b * kInt8W16Block + c;
          const int want = k < K && n < N ? w.w[static_cast<size_t>(k * w.ldw + n)] : 0;
          EXPECT_EQ(pw.block(b)[(p * kInt8W16Block + c) * 2 + j], want) << "k=" << k << " n=" << n;
        }
  }
  for (int64_t n = N; n < 2 * kInt8W16Block; ++n) EXPECT_EQ(pw.scale()[n], 0.f);
}

TEST(Int8W16Gemm, AppliesWhileTheSumsStayExact) {
  EXPECT_TRUE(int8_w16_applies(1));
  EXPECT_TRUE(int8_w16_applies(4096));
  EXPECT_TRUE(int8_w16_applies(kInt8W16MaxK));
  EXPECT_FALSE(int8_w16_applies(0));
  EXPECT_FALSE(int8_w16_applies(kInt8W16MaxK + 1));
  EXPECT_LT(static_cast<double>(kInt8W16MaxK) * 32767 * 128, std::ldexp(1.0, 53));
}

TEST(Int8W16Gemm, ActivePathFollowsTheSimdLevel) {
  {
    simd::ScopedIsa scalar(simd::Isa::kScalar);
    EXPECT_EQ(detail::int_gemm_active_isa(), IntGemmIsa::kPortable);
  }
  if (simd::detected_isa() >= simd::Isa::kAvx2) {
    simd::ScopedIsa avx2(simd::Isa::kAvx2);
    EXPECT_NE(detail::int_gemm_active_isa(), IntGemmIsa::kAvx512Vnni);
  }
  const IntGemmIsa active = detail::int_gemm_active_isa();
  EXPECT_TRUE(detail::int_gemm_isa_supported(active));
  if (simd::active_isa() == simd::Isa::kAvx512) {
    EXPECT_EQ(active == IntGemmIsa::kAvx512Vnni, detail::int_gemm_isa_supported(IntGemmIsa::kAvx512Vnni));
  }
}

}  // namespace
}  // namespace sdx::cpu
