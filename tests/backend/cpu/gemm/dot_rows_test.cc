// dot_rows (backend/cpu/gemm/dot_rows.h): the vectorized path against the portable one bit for bit, and
// both against a double-precision reference, on odd sizes (d not a multiple of 8, odd row counts, ld > d).
#include "backend/cpu/gemm/dot_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace sdx::cpu {
namespace {

TEST(DotRows, MatchesPortableBitForBitAndDoubleReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  for (int64_t d : {1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 130}) {
    for (int64_t n : {1, 2, 3, 5, 128, 129}) {
      const int64_t ld = d + 3;
      std::vector<float> x(static_cast<size_t>(d)), rows(static_cast<size_t>(n * ld), NAN);
      for (float& v : x) v = dist(rng);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t k = 0; k < d; ++k) rows[static_cast<size_t>(j * ld + k)] = dist(rng);  // padding stays NaN
      std::vector<float> y(static_cast<size_t>(n)), yp(static_cast<size_t>(n));
      dot_rows(x.data(), rows.data(), ld, n, d, 0.125f, y.data());
      detail::dot_rows_portable(x.data(), rows.data(), ld, n, d, 0.125f, yp.data());
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(std::memcmp(&y[static_cast<size_t>(j)], &yp[static_cast<size_t>(j)], sizeof(float)), 0)
            << "d " << d << " n " << n << " row " << j;
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < d; ++k) {
          const double p = static_cast<double>(x[static_cast<size_t>(k)]) * rows[static_cast<size_t>(j * ld + k)];
          ref += p;
          mag += std::fabs(p);
        }
        EXPECT_NEAR(y[static_cast<size_t>(j)], 0.125 * ref, 0.125 * mag * 1e-6 + 1e-30) << "d " << d << " row " << j;
      }
    }
  }
  // Without AVX2/FMA both calls take the portable path (the reference check still holds).
  RecordProperty("vectorized", detail::dot_rows_vectorized() ? "yes" : "no");
}

}  // namespace
}  // namespace sdx::cpu
