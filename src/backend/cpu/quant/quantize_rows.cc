#include "backend/cpu/quant/quantize_rows.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sdx::cpu {
namespace {

template <typename Q>
Q quantize_one(float x, float s, int32_t zp) {
  const float r = std::nearbyint(x / s);
  const int64_t v = (r >= -2147483648.f && r < 2147483648.f) ? static_cast<int32_t>(r) : INT32_MIN;
  return static_cast<Q>(std::clamp<int64_t>(v + zp, std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max()));
}

template <typename Q>
void quantize_scalar(const float* x, float s, int32_t zp, Q* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_one<Q>(x[i], s, zp);
}

template <typename Q>
void dequantize_scalar(const Q* x, float s, float zp, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zp) * s;
}

#if defined(__SSE2__)
// 16 values per step. cvtps2dq rounds as the MXCSR says (half to even unless a caller changed it, as
// nearbyint would follow it too) and gives 0x80000000 for NaN and out-of-range lanes: INT32_MIN. The
// saturating packs then add zp in int16 and clamp to 8 bits, which equals clamp(v + zp) on the int32:
// a v the int16 pack saturates is at least 32767 - 128 or at most -32768 + 255 after zp, outside both
// 8-bit ranges on the same side.
template <bool kSigned>
int64_t quantize_sse2(const float* x, float s, int32_t zp, void* y, int64_t n) {
  const __m128 sv = _mm_set1_ps(s);
  const __m128i zv = _mm_set1_epi16(static_cast<int16_t>(zp));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_cvtps_epi32(_mm_div_ps(_mm_loadu_ps(x + i), sv));
    const __m128i b = _mm_cvtps_epi32(_mm_div_ps(_mm_loadu_ps(x + i + 4), sv));
    const __m128i c = _mm_cvtps_epi32(_mm_div_ps(_mm_loadu_ps(x + i + 8), sv));
    const __m128i d = _mm_cvtps_epi32(_mm_div_ps(_mm_loadu_ps(x + i + 12), sv));
    const __m128i lo = _mm_adds_epi16(_mm_packs_epi32(a, b), zv);
    const __m128i hi = _mm_adds_epi16(_mm_packs_epi32(c, d), zv);
    const __m128i q = kSigned ? _mm_packs_epi16(lo, hi) : _mm_packus_epi16(lo, hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint8_t*>(y) + i), q);
  }
  return i;
}

// 16 values per step: bytes widened to int32 (sign- or zero-extended by unpacking), then as the scalar loop.
template <bool kSigned>
int64_t dequantize_sse2(const void* x, float s, float zp, float* y, int64_t n) {
  const __m128 sv = _mm_set1_ps(s), zv = _mm_set1_ps(zp);
  const __m128i zero = _mm_setzero_si128();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint8_t*>(x) + i));
    __m128i w[2];
    if constexpr (kSigned) {
      w[0] = _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8);
      w[1] = _mm_srai_epi16(_mm_unpackhi_epi8(b, b), 8);
    } else {
      w[0] = _mm_unpacklo_epi8(b, zero);
      w[1] = _mm_unpackhi_epi8(b, zero);
    }
    for (int h = 0; h < 2; ++h) {
      const __m128i d0 = kSigned ? _mm_srai_epi32(_mm_unpacklo_epi16(w[h], w[h]), 16) : _mm_unpacklo_epi16(w[h], zero);
      const __m128i d1 = kSigned ? _mm_srai_epi32(_mm_unpackhi_epi16(w[h], w[h]), 16) : _mm_unpackhi_epi16(w[h], zero);
      _mm_storeu_ps(y + i + 8 * h, _mm_mul_ps(_mm_sub_ps(_mm_cvtepi32_ps(d0), zv), sv));
      _mm_storeu_ps(y + i + 8 * h + 4, _mm_mul_ps(_mm_sub_ps(_mm_cvtepi32_ps(d1), zv), sv));
    }
  }
  return i;
}
#endif

// The vector loop where there is one, then the scalar loop for the rest (the same bits).
template <typename Q>
void quantize_row_impl(const float* x, float s, int32_t zp, Q* y, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  i = quantize_sse2<std::is_signed_v<Q>>(x, s, zp, y, n);
#endif
  quantize_scalar(x + i, s, zp, y + i, n - i);
}

template <typename Q>
void dequantize_row_impl(const Q* x, float s, float zp, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  i = dequantize_sse2<std::is_signed_v<Q>>(x, s, zp, y, n);
#endif
  dequantize_scalar(x + i, s, zp, y + i, n - i);
}

template <typename Q>
void quantize_channels_impl(const float* x, const float* s, const Q* zp, Q* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_one<Q>(x[i], s[i], zp ? zp[i] : 0);
}

template <typename Q>
void dequantize_channels_impl(const Q* x, const float* s, const Q* zp, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - (zp ? static_cast<float>(zp[i]) : 0.f)) * s[i];
}

}  // namespace

void quantize_row(const float* x, float s, int32_t zp, uint8_t* y, int64_t n) { quantize_row_impl(x, s, zp, y, n); }
void quantize_row(const float* x, float s, int32_t zp, int8_t* y, int64_t n) { quantize_row_impl(x, s, zp, y, n); }
void dequantize_row(const uint8_t* x, float s, float zp, float* y, int64_t n) { dequantize_row_impl(x, s, zp, y, n); }
void dequantize_row(const int8_t* x, float s, float zp, float* y, int64_t n) { dequantize_row_impl(x, s, zp, y, n); }

void quantize_channels(const float* x, const float* s, const uint8_t* zp, uint8_t* y, int64_t n) {
  quantize_channels_impl(x, s, zp, y, n);
}
void quantize_channels(const float* x, const float* s, const int8_t* zp, int8_t* y, int64_t n) {
  quantize_channels_impl(x, s, zp, y, n);
}
void dequantize_channels(const uint8_t* x, const float* s, const uint8_t* zp, float* y, int64_t n) {
  dequantize_channels_impl(x, s, zp, y, n);
}
void dequantize_channels(const int8_t* x, const float* s, const int8_t* zp, float* y, int64_t n) {
  dequantize_channels_impl(x, s, zp, y, n);
}

}  // namespace sdx::cpu
