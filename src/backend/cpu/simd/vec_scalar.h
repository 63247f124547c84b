// One-lane "vector" for the portable fallback (internal to simd/; included by kernels_scalar.cc
// only). Same interface as vec_avx2.h; fmadd is a multiply then an add (no fused rounding).
#pragma once

#include <cstdint>
#include <cstring>

namespace sdx::cpu::simd {
namespace {

struct ScalarIsa {
  static constexpr int kLanes = 1;
  struct F { float v; };
  struct D { double v; };
  struct I { int32_t v; };
  using M = bool;

  static F set1(float x) { return {x}; }
  static F load(const float* p) { return {*p}; }
  static void store(float* p, F a) { *p = a.v; }
  // Never called with one lane (a tail is always empty); present for the common interface.
  static F load_partial(const float* p, int64_t) { return {*p}; }
  static void store_partial(float* p, F a, int64_t) { *p = a.v; }

  static F add(F a, F b) { return {a.v + b.v}; }
  static F sub(F a, F b) { return {a.v - b.v}; }
  static F mul(F a, F b) { return {a.v * b.v}; }
  static F div(F a, F b) { return {a.v / b.v}; }
  static F fmadd(F a, F b, F c) { return {a.v * b.v + c.v}; }
  static F fnmadd(F a, F b, F c) { return {c.v - a.v * b.v}; }
  // x86 semantics: the second operand when either is NaN (so max(x, 0) maps a NaN x to 0: code that
  // must keep NaN selects on an ordered compare instead, as relu_row does).
  static F min(F a, F b) { return {a.v < b.v ? a.v : b.v}; }
  static F max(F a, F b) { return {a.v > b.v ? a.v : b.v}; }
  static uint32_t bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
  }
  static float from_bits(uint32_t u) {
    float x;
    std::memcpy(&x, &u, 4);
    return x;
  }
  static F abs(F a) { return {from_bits(bits(a.v) & 0x7fffffffu)}; }
  static F neg(F a) { return {from_bits(bits(a.v) ^ 0x80000000u)}; }
  // |mag| with the sign of sgn.
  static F copysign(F mag, F sgn) {
    return {from_bits((bits(mag.v) & 0x7fffffffu) | (bits(sgn.v) & 0x80000000u))};
  }
  // Ordered comparisons: false when either operand is NaN.
  static M lt(F a, F b) { return a.v < b.v; }
  static M le(F a, F b) { return a.v <= b.v; }
  static M ge(F a, F b) { return a.v >= b.v; }
  static M is_nan(F a) { return a.v != a.v; }
  static F select(M m, F a, F b) { return m ? a : b; }

  // a holds an integral value in int32 range.
  static I to_int(F a) { return {static_cast<int32_t>(a.v)}; }
  static I sar1(I a) { return {a.v >> 1}; }
  static I sub(I a, I b) { return {a.v - b.v}; }
  // 2^n for n in [-126, 127].
  static F pow2i(I n) { return {from_bits(static_cast<uint32_t>(n.v + 127) << 23)}; }

  // Doubles: the float widened (one lane: no high half, see kTwoHalves in kernels_impl.h).
  static D cvt_lo(F a) { return {static_cast<double>(a.v)}; }
  static D add(D a, D b) { return {a.v + b.v}; }
  static D sub(D a, D b) { return {a.v - b.v}; }
  static D fmadd(D a, D b, D c) { return {a.v * b.v + c.v}; }
  static D set1d(double x) { return {x}; }
  static D abs(D a) { return {a.v < 0 ? -a.v : a.v}; }
  static double hsum(D a) { return a.v; }
  static float hmax(F a) { return a.v; }
  static float hmin(F a) { return a.v; }
  static bool any(M m) { return m; }
  static M or_(M a, M b) { return a || b; }
};

}  // namespace
}  // namespace sdx::cpu::simd
