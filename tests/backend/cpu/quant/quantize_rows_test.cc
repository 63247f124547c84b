// quantize_row / dequantize_row against the onnx reference's arithmetic written out in double, for
// every length up to 50 (the vector body and every tail) with ties, NaN, infinities and values past
// int32 at every position.
#include "backend/cpu/quant/quantize_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace sdx::cpu {
namespace {

template <typename Q>
double reference_quantize(float x, float s, int32_t zp) {
  const double q = static_cast<float>(static_cast<double>(x) / s);  // the reference's divide, rounded to float32
  const double r = std::nearbyint(q);
  const double v = (r > -2147483649.0 && r < 2147483648.0) ? static_cast<double>(static_cast<int32_t>(r)) : INT32_MIN;
  return std::clamp(v + zp, double(std::numeric_limits<Q>::min()), double(std::numeric_limits<Q>::max()));
}

template <typename Q>
void check(float s, int32_t zp) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 200.f);
  const float specials[] = {std::nanf(""), INFINITY, -INFINITY, 1e30f, -1e30f, 2.5f * s, -3.5f * s, 0.5f * s,
                            127.5f * s, -128.5f * s, 255.5f * s, 40000.f * s, -40000.f * s, 2147483520.f, -0.f};
  for (int64_t n = 0; n <= 50; ++n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = i % 3 == 0 ? specials[(i / 3) % 15] : x[static_cast<size_t>(i)];
    std::vector<Q> y(static_cast<size_t>(n));
    quantize_row(x.data(), s, zp, y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(static_cast<double>(y[static_cast<size_t>(i)]), reference_quantize<Q>(x[static_cast<size_t>(i)], s, zp))
          << "n " << n << " i " << i << " x " << x[static_cast<size_t>(i)];
    std::vector<float> back(static_cast<size_t>(n));
    dequantize_row(y.data(), s, static_cast<float>(zp), back.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float dx = static_cast<float>(y[static_cast<size_t>(i)]) - static_cast<float>(zp);
      ASSERT_EQ(back[static_cast<size_t>(i)], static_cast<float>(static_cast<double>(dx) * s)) << "n " << n << " i " << i;
    }
  }
}

TEST(QuantizeRows, Uint8MatchesTheReference) {
  check<uint8_t>(0.37f, 128);
  check<uint8_t>(2.f, 0);
  check<uint8_t>(0.01f, 255);
}

TEST(QuantizeRows, Int8MatchesTheReference) {
  check<int8_t>(0.37f, 0);
  check<int8_t>(1.5f, -128);
  check<int8_t>(0.02f, 127);
}

}  // namespace
}  // namespace sdx::cpu
