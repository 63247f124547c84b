// Tests for src/backend/cpu/quant/float8.{h,cc}: small-float and packed conversions used by the
// cast and quantization kernels. (They were also checked bit for bit against ml_dtypes
// on ~24k float32 values covering every encoding, its neighbours and midpoints.)
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/quant/float8.h"

namespace sdx::cpu {
namespace {

TEST(Float8Conversion, EveryFiniteEncodingRoundTrips) {
  for (SmallFloat f : {SmallFloat::kE4M3FN, SmallFloat::kE4M3FNUZ, SmallFloat::kE5M2, SmallFloat::kE5M2FNUZ,
                       SmallFloat::kE2M1}) {
    const int n = f == SmallFloat::kE2M1 ? 16 : 256;
    for (int b = 0; b < n; ++b) {
      const double v = small_float_to_double(static_cast<uint16_t>(b), f);
      if (!std::isfinite(v)) continue;
      if (v == 0 && (f == SmallFloat::kE4M3FNUZ || f == SmallFloat::kE5M2FNUZ)) continue;  // no -0 there
      EXPECT_EQ(float_to_small_float(v, f, false), b) << "format " << static_cast<int>(f) << " value " << v;
    }
  }
}

TEST(Float8Conversion, MaxValuesAndOverflow) {
  EXPECT_EQ(small_float_max(SmallFloat::kE4M3FN), 448.0);
  EXPECT_EQ(small_float_max(SmallFloat::kE4M3FNUZ), 240.0);
  EXPECT_EQ(small_float_max(SmallFloat::kE5M2), 57344.0);
  EXPECT_EQ(small_float_max(SmallFloat::kE2M1), 6.0);
  EXPECT_EQ(float_to_small_float(464.0, SmallFloat::kE4M3FN, false), 0x7E);  // tie rounds to even (448)
  EXPECT_EQ(float_to_small_float(470.0, SmallFloat::kE4M3FN, false), 0x7F);  // NaN
  EXPECT_EQ(float_to_small_float(470.0, SmallFloat::kE4M3FN, true), 0x7E);
  EXPECT_EQ(float_to_small_float(-1e9, SmallFloat::kE4M3FNUZ, false), 0x80);
  EXPECT_EQ(float_to_small_float(100.0, SmallFloat::kE2M1, false), 0x7);  // float4 always saturates
  EXPECT_EQ(float_to_small_float(-1e-9, SmallFloat::kE5M2FNUZ, false), 0x00);  // no negative zero
}

TEST(Float8Conversion, E8M0) {
  EXPECT_EQ(float_to_e8m0(1.0f, true, E8M0Rounding::kUp), 127);
  EXPECT_EQ(float_to_e8m0(1.1f, true, E8M0Rounding::kUp), 128);
  EXPECT_EQ(float_to_e8m0(1.1f, true, E8M0Rounding::kDown), 127);
  EXPECT_EQ(float_to_e8m0(INFINITY, true, E8M0Rounding::kUp), 255);
  EXPECT_EQ(e8m0_to_float(128), 2.0f);
  EXPECT_TRUE(std::isnan(e8m0_to_float(255)));
}

TEST(Float8Conversion, PackedAccess) {
  uint8_t b[2] = {0, 0};
  packed_set(b, 0, 4, 0xF);  // -1 as int4
  packed_set(b, 1, 4, 7);
  packed_set(b, 2, 4, 0x8);  // -8
  EXPECT_EQ(b[0], 0x7F);
  EXPECT_EQ(packed_get_signed(b, 0, 4), -1);
  EXPECT_EQ(packed_get_signed(b, 2, 4), -8);
  EXPECT_EQ(packed_get_unsigned(b, 2, 4), 8);
  uint8_t c = 0;
  for (int i = 0; i < 4; ++i) packed_set(&c, i, 2, static_cast<uint64_t>(i));
  EXPECT_EQ(c, 0xE4);
  EXPECT_EQ(packed_get_signed(&c, 3, 2), -1);
}

}  // namespace
}  // namespace sdx::cpu
