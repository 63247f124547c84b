#include "backend/cpu/quant/float8.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace sdx::cpu {
namespace {

enum class Special : uint8_t {
  kIeee,  // exponent all ones: Inf (mantissa 0) or NaN
  kFn,    // only S.1..1.1..1 is NaN; no Inf
  kFnuz,  // 0x80 (negative zero) is the only NaN; no Inf
  kNone,  // no Inf/NaN at all (FLOAT4E2M1)
};

struct Format {
  int ebits, mbits, bias;
  Special special;
};

Format format_of(SmallFloat f) {
  switch (f) {
    case SmallFloat::kE4M3FN: return {4, 3, 7, Special::kFn};
    case SmallFloat::kE4M3FNUZ: return {4, 3, 8, Special::kFnuz};
    case SmallFloat::kE5M2: return {5, 2, 15, Special::kIeee};
    case SmallFloat::kE5M2FNUZ: return {5, 2, 16, Special::kFnuz};
    case SmallFloat::kE2M1: return {2, 1, 1, Special::kNone};
    case SmallFloat::kF16: return {5, 10, 15, Special::kIeee};
  }
  return {4, 3, 7, Special::kFn};
}

// Largest finite encoding without the sign bit.
uint16_t max_bits(const Format& f) {
  const uint16_t all = static_cast<uint16_t>((1u << (f.ebits + f.mbits)) - 1u);
  switch (f.special) {
    case Special::kIeee: return static_cast<uint16_t>(all - (1u << f.mbits));  // exponent all ones minus one, mantissa all ones
    case Special::kFn: return static_cast<uint16_t>(all - 1u);
    case Special::kFnuz:
    case Special::kNone: return all;
  }
  return all;
}

uint16_t sign_bit(const Format& f) { return static_cast<uint16_t>(1u << (f.ebits + f.mbits)); }

double decode(uint16_t bits, const Format& f) {
  const uint16_t sign = bits & sign_bit(f);
  const uint32_t mag = bits & (sign_bit(f) - 1u);
  const uint32_t exp = mag >> f.mbits;
  const uint32_t man = mag & ((1u << f.mbits) - 1u);
  const uint32_t exp_all = (1u << f.ebits) - 1u;
  if (f.special == Special::kFnuz && sign && mag == 0) return std::numeric_limits<double>::quiet_NaN();
  if (f.special == Special::kFn && exp == exp_all && man == (1u << f.mbits) - 1u)
    return sign ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
  if (f.special == Special::kIeee && exp == exp_all) {
    if (man != 0) return sign ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
    return sign ? -HUGE_VAL : HUGE_VAL;
  }
  double v = exp == 0 ? std::ldexp(static_cast<double>(man), 1 - f.bias - f.mbits)
                      : std::ldexp(static_cast<double>(man | (1u << f.mbits)), static_cast<int>(exp) - f.bias - f.mbits);
  return sign ? -v : v;
}

uint16_t nan_bits(const Format& f, bool negative) {
  const uint16_t s = negative ? sign_bit(f) : 0;
  switch (f.special) {
    case Special::kIeee:  // quiet NaN: exponent all ones, top mantissa bit set
      return static_cast<uint16_t>(s | (((1u << f.ebits) - 1u) << f.mbits) | (1u << (f.mbits - 1)));
    case Special::kFn: return static_cast<uint16_t>(s | (sign_bit(f) - 1u));
    case Special::kFnuz: return sign_bit(f);
    case Special::kNone:  // ml_dtypes maps NaN to a zero with the sign flipped
      return negative ? 0 : sign_bit(f);
  }
  return 0;
}

// What an out-of-range magnitude becomes without saturation.
uint16_t overflow_bits(const Format& f, bool negative) {
  const uint16_t s = negative ? sign_bit(f) : 0;
  switch (f.special) {
    case Special::kIeee: return static_cast<uint16_t>(s | (((1u << f.ebits) - 1u) << f.mbits));
    case Special::kFn:
    case Special::kFnuz: return nan_bits(f, negative);
    case Special::kNone: return static_cast<uint16_t>(s | max_bits(f));
  }
  return 0;
}

}  // namespace

double small_float_max(SmallFloat fmt) {
  const Format f = format_of(fmt);
  return decode(max_bits(f), f);
}

double small_float_to_double(uint16_t bits, SmallFloat fmt) { return decode(bits, format_of(fmt)); }

const double* small_float_table(SmallFloat fmt) {
  struct Tables {
    double t[5][256];
    Tables() {
      const SmallFloat fmts[5] = {SmallFloat::kE4M3FN, SmallFloat::kE4M3FNUZ, SmallFloat::kE5M2, SmallFloat::kE5M2FNUZ,
                                  SmallFloat::kE2M1};
      for (int k = 0; k < 5; ++k)
        for (int b = 0; b < 256; ++b) t[k][b] = decode(static_cast<uint16_t>(b & (fmts[k] == SmallFloat::kE2M1 ? 0xf : 0xff)), format_of(fmts[k]));
    }
  };
  static const Tables tables;  // thread-safe one-time initialization
  const int k = static_cast<int>(fmt);
  return tables.t[k < 5 ? k : 0];
}

uint16_t float_to_small_float(double v, SmallFloat fmt, bool saturate) {
  const Format f = format_of(fmt);
  const bool negative = std::signbit(v);
  const uint16_t s = negative ? sign_bit(f) : 0;
  if (std::isnan(v)) return nan_bits(f, negative);
  const double a = std::fabs(v);
  const double max = decode(max_bits(f), f);
  if (std::isinf(a)) return saturate ? static_cast<uint16_t>(s | max_bits(f)) : overflow_bits(f, negative);
  // Quantum (spacing) at a's binade; subnormals share the smallest normal binade's quantum.
  const int min_exp = 1 - f.bias;
  int e = a == 0 ? min_exp : std::ilogb(a);
  if (e < min_exp) e = min_exp;
  const int qexp = e - f.mbits;
  const double r = std::nearbyint(std::ldexp(a, -qexp));  // round to nearest even (default FP environment)
  const double rounded = std::ldexp(r, qexp);
  if (rounded > max) return saturate ? static_cast<uint16_t>(s | max_bits(f)) : overflow_bits(f, negative);
  if (rounded == 0) return f.special == Special::kFnuz ? 0 : s;  // FNUZ has no negative zero
  const auto ri = static_cast<uint32_t>(r);
  uint32_t mag;
  if (ri < (1u << f.mbits)) {
    mag = ri;  // subnormal (only possible at e == min_exp)
  } else if (ri == (1u << (f.mbits + 1))) {
    mag = static_cast<uint32_t>(e + 1 + f.bias) << f.mbits;  // rounding carried into the next binade
  } else {
    mag = (static_cast<uint32_t>(e + f.bias) << f.mbits) | (ri - (1u << f.mbits));
  }
  return static_cast<uint16_t>(s | mag);
}

uint8_t float_to_e8m0(float v, bool saturate, E8M0Rounding mode) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  uint32_t exponent = (bits >> 23) & 0xffu;
  if (exponent == 0xffu) return 0xff;  // NaN and Inf
  bool round_up = false;
  switch (mode) {
    case E8M0Rounding::kUp: round_up = (bits & 0x7fffffu) != 0; break;
    case E8M0Rounding::kDown: break;
    case E8M0Rounding::kNearest: {
      const bool g = bits & 0x400000u, r = bits & 0x200000u, st = (bits & 0x1fffffu) != 0, lsb = exponent > 0;
      round_up = g && (r || st || lsb);
      break;
    }
  }
  if (round_up && saturate && exponent == 0xfeu) round_up = false;
  return static_cast<uint8_t>(exponent + (round_up ? 1u : 0u));
}

float e8m0_to_float(uint8_t bits) {
  if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

}  // namespace sdx::cpu
