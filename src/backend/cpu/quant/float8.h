// Conversions for the 8-, 4- and 2-bit ONNX element types, and access to packed storage.
//
//   uint8_t b = float_to_small_float(0.3, SmallFloat::kE4M3FN, /*saturate=*/true);
//   double v = small_float_to_double(b, SmallFloat::kE4M3FN);
//   uint8_t e = float_to_e8m0(3.0f, /*saturate=*/true, E8M0Rounding::kUp);   // 2^2
//   int64_t n = packed_get_signed(data, i, /*bits=*/4);  packed_set(data, i, 4, n);
//
// Semantics follow ml_dtypes (what onnx's reference uses): round to nearest even from
// the exact source value; on overflow IEEE-like formats (E5M2) give Inf, the FN/FNUZ
// formats give NaN, and FLOAT4E2M1 (no Inf/NaN) saturates. With saturate=true
// out-of-range values and infinities clamp to the largest finite value instead
// (onnx's saturate_cast). Packed types are stored per ONNX: 4-bit elements two per
// byte, 2-bit elements four per byte, the lowest bits holding the first element.
#pragma once

#include <cstdint>

namespace sdx::cpu {

enum class SmallFloat : uint8_t {
  kE4M3FN,    // bias 7, no Inf, NaN = S.1111.111, max 448
  kE4M3FNUZ,  // bias 8, no Inf, no -0, NaN = 0x80, max 240
  kE5M2,      // bias 15, IEEE Inf/NaN, max 57344
  kE5M2FNUZ,  // bias 16, no Inf, no -0, NaN = 0x80, max 57344
  kE2M1,      // FLOAT4E2M1: bias 1, no Inf/NaN, max 6 (4 bits)
  kF16,       // IEEE half (16 bits): used to round doubles straight to float16 like numpy
};

// Rounds v (any double) to the format; returns the bit pattern in the low bits.
uint16_t float_to_small_float(double v, SmallFloat fmt, bool saturate);
// The value of a bit pattern (NaN for NaN encodings).
double small_float_to_double(uint16_t bits, SmallFloat fmt);
// Largest finite value of the format.
double small_float_max(SmallFloat fmt);
// Decode table indexed by bit pattern (256 entries; 16 for E2M1; not for kF16), built once.
const double* small_float_table(SmallFloat fmt);

// FLOAT8E8M0: an unsigned power of two 2^(e-127), 0xFF = NaN. Conversion looks at the
// float32 exponent only (as onnx.numpy_helper.to_float8e8m0 does: the sign is dropped).
enum class E8M0Rounding : uint8_t { kUp, kDown, kNearest };
uint8_t float_to_e8m0(float v, bool saturate, E8M0Rounding mode);
float e8m0_to_float(uint8_t bits);

// Packed sub-byte elements (bits = 2 or 4).
inline uint8_t packed_get_bits(const uint8_t* data, int64_t i, int bits) {
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(i % per_byte) * bits;
  return static_cast<uint8_t>((data[i / per_byte] >> shift) & ((1u << bits) - 1u));
}
inline int64_t packed_get_signed(const uint8_t* data, int64_t i, int bits) {
  const int64_t u = packed_get_bits(data, i, bits);
  return (u & (int64_t{1} << (bits - 1))) ? u - (int64_t{1} << bits) : u;
}
inline int64_t packed_get_unsigned(const uint8_t* data, int64_t i, int bits) { return packed_get_bits(data, i, bits); }
// Stores the low `bits` bits of v; the byte must have been zeroed or hold earlier elements.
inline void packed_set(uint8_t* data, int64_t i, int bits, uint64_t v) {
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(i % per_byte) * bits;
  const uint8_t mask = static_cast<uint8_t>(((1u << bits) - 1u) << shift);
  uint8_t& b = data[i / per_byte];
  b = static_cast<uint8_t>((b & ~mask) | ((static_cast<uint8_t>(v) << shift) & mask));
}

}  // namespace sdx::cpu
