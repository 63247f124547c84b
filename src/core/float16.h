// 16-bit floating types stored as bits, with IEEE round-to-nearest-even conversions.
//
//   Float16 h = Float16::from_float(1.5f);  float f = h.to_float();
#pragma once

#include <cstdint>
#include <cstring>

namespace sdx {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Float16 {
  uint16_t bits = 0;

  static Float16 from_bits(uint16_t b) { return Float16{b}; }
  static Float16 from_float(float f) {
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) return {static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u))};
    int32_t e = static_cast<int32_t>(exp) - 127 + 15;
    if (e >= 31) return {static_cast<uint16_t>(sign | 0x7c00u)};
    if (e <= 0) {
      if (e < -10) return {static_cast<uint16_t>(sign)};
      mant |= 0x800000u;
      uint32_t shift = static_cast<uint32_t>(14 - e);
      uint32_t half = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1u);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1u))) ++half;
      return {static_cast<uint16_t>(sign | half)};
    }
    uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into exponent: correct
    return {static_cast<uint16_t>(h)};
  }
  float to_float() const {
    uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    uint32_t exp = (bits >> 10) & 0x1fu;
    uint32_t mant = bits & 0x3ffu;
    if (exp == 0) {
      if (mant == 0) return bits_float(sign);
      // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      return bits_float(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13));
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  }
  explicit operator float() const { return to_float(); }
};

struct BFloat16 {
  uint16_t bits = 0;

  static BFloat16 from_bits(uint16_t b) { return BFloat16{b}; }
  static BFloat16 from_float(float f) {
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((x >> 16) | 0x40u)};  // quiet NaN
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return {static_cast<uint16_t>((x + rounding) >> 16)};
  }
  float to_float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }
  explicit operator float() const { return to_float(); }
};

}  // namespace sdx
