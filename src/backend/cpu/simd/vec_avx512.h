// 16-lane float vectors on AVX-512F (internal to simd/; included by kernels_avx512.cc only,
// which is compiled with -mavx512f -mavx2 -mfma). The interface is vec_scalar.h's; see
// vec_avx2.h for why only intrinsics appear here.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace sdx::cpu::simd {
namespace {

struct Avx512Isa {
  static constexpr int kLanes = 16;
  struct F { __m512 v; };
  struct D { __m512d v; };
  struct I { __m512i v; };
  using M = __mmask16;

  static F set1(float x) { return {_mm512_set1_ps(x)}; }
  static F load(const float* p) { return {_mm512_loadu_ps(p)}; }
  static void store(float* p, F a) { _mm512_storeu_ps(p, a.v); }
  static __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static F load_partial(const float* p, int64_t n) { return {_mm512_maskz_loadu_ps(tail_mask(n), p)}; }
  static void store_partial(float* p, F a, int64_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), a.v); }

  static F add(F a, F b) { return {_mm512_add_ps(a.v, b.v)}; }
  static F sub(F a, F b) { return {_mm512_sub_ps(a.v, b.v)}; }
  static F mul(F a, F b) { return {_mm512_mul_ps(a.v, b.v)}; }
  static F div(F a, F b) { return {_mm512_div_ps(a.v, b.v)}; }
  static F fmadd(F a, F b, F c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
  static F fnmadd(F a, F b, F c) { return {_mm512_fnmadd_ps(a.v, b.v, c.v)}; }
  static F min(F a, F b) { return {_mm512_min_ps(a.v, b.v)}; }
  static F max(F a, F b) { return {_mm512_max_ps(a.v, b.v)}; }
  static __m512 as_f(__m512i a) { return _mm512_castsi512_ps(a); }
  static __m512i as_i(__m512 a) { return _mm512_castps_si512(a); }
  static F abs(F a) { return {as_f(_mm512_and_epi32(as_i(a.v), _mm512_set1_epi32(0x7fffffff)))}; }
  static F neg(F a) { return {as_f(_mm512_xor_epi32(as_i(a.v), _mm512_set1_epi32(static_cast<int>(0x80000000u))))}; }
  static F copysign(F mag, F sgn) {
    // Bit select (0xca: A ? B : C) of mag where the mask is set, sgn elsewhere.
    return {as_f(_mm512_ternarylogic_epi32(_mm512_set1_epi32(0x7fffffff), as_i(mag.v), as_i(sgn.v), 0xca))};
  }
  static M lt(F a, F b) { return _mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ); }
  static M le(F a, F b) { return _mm512_cmp_ps_mask(a.v, b.v, _CMP_LE_OQ); }
  static M ge(F a, F b) { return _mm512_cmp_ps_mask(a.v, b.v, _CMP_GE_OQ); }
  static M is_nan(F a) { return _mm512_cmp_ps_mask(a.v, a.v, _CMP_UNORD_Q); }
  static F select(M m, F a, F b) { return {_mm512_mask_blend_ps(m, b.v, a.v)}; }

  static I to_int(F a) { return {_mm512_cvtps_epi32(a.v)}; }
  static I sar1(I a) { return {_mm512_srai_epi32(a.v, 1)}; }
  static I sub(I a, I b) { return {_mm512_sub_epi32(a.v, b.v)}; }
  static F pow2i(I n) { return {as_f(_mm512_slli_epi32(_mm512_add_epi32(n.v, _mm512_set1_epi32(127)), 23))}; }

  static D cvt_lo(F a) { return {_mm512_cvtps_pd(_mm512_castps512_ps256(a.v))}; }
  static D cvt_hi(F a) {
    return {_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a.v), 1)))};
  }
  static D add(D a, D b) { return {_mm512_add_pd(a.v, b.v)}; }
  static D sub(D a, D b) { return {_mm512_sub_pd(a.v, b.v)}; }
  static D fmadd(D a, D b, D c) { return {_mm512_fmadd_pd(a.v, b.v, c.v)}; }
  static D set1d(double x) { return {_mm512_set1_pd(x)}; }
  static D abs(D a) {
    return {_mm512_castsi512_pd(_mm512_and_epi64(_mm512_castpd_si512(a.v), _mm512_set1_epi64(0x7fffffffffffffffLL)))};
  }
  static double hsum(D a) {
    const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(a.v), _mm512_extractf64x4_pd(a.v, 1));
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }
  static float hmax(F a) {
    const __m256 lo = _mm512_castps512_ps256(a.v);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a.v), 1));
    __m256 m = _mm256_max_ps(lo, hi);
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmin(F a) {
    const __m256 lo = _mm512_castps512_ps256(a.v);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a.v), 1));
    __m256 m = _mm256_min_ps(lo, hi);
    __m128 s = _mm_min_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_min_ps(s, _mm_movehl_ps(s, s));
    s = _mm_min_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static bool any(M m) { return m != 0; }
  static M or_(M a, M b) { return static_cast<M>(a | b); }
};

}  // namespace
}  // namespace sdx::cpu::simd
