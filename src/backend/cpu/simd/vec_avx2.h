// 8-lane float vectors on AVX2 + FMA (internal to simd/; included by kernels_avx2.cc only,
// which is compiled with -mavx2 -mfma). The interface is vec_scalar.h's.
//
// Only intrinsics and builtins here: an inline library function instantiated in this file
// could be merged by the linker with the baseline build's copy and run on a CPU without AVX2.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace sdx::cpu::simd {
namespace {

struct Avx2Isa {
  static constexpr int kLanes = 8;
  struct F { __m256 v; };
  struct D { __m256d v; };
  struct I { __m256i v; };
  struct M { __m256 v; };

  static F set1(float x) { return {_mm256_set1_ps(x)}; }
  static F load(const float* p) { return {_mm256_loadu_ps(p)}; }
  static void store(float* p, F a) { _mm256_storeu_ps(p, a.v); }
  static __m256i tail_mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // n < kLanes lanes; the others read as 0 and are never touched in memory.
  static F load_partial(const float* p, int64_t n) { return {_mm256_maskload_ps(p, tail_mask(n))}; }
  static void store_partial(float* p, F a, int64_t n) { _mm256_maskstore_ps(p, tail_mask(n), a.v); }

  static F add(F a, F b) { return {_mm256_add_ps(a.v, b.v)}; }
  static F sub(F a, F b) { return {_mm256_sub_ps(a.v, b.v)}; }
  static F mul(F a, F b) { return {_mm256_mul_ps(a.v, b.v)}; }
  static F div(F a, F b) { return {_mm256_div_ps(a.v, b.v)}; }
  static F fmadd(F a, F b, F c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
  static F fnmadd(F a, F b, F c) { return {_mm256_fnmadd_ps(a.v, b.v, c.v)}; }
  static F min(F a, F b) { return {_mm256_min_ps(a.v, b.v)}; }
  static F max(F a, F b) { return {_mm256_max_ps(a.v, b.v)}; }
  static F abs(F a) { return {_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v)}; }
  static F neg(F a) { return {_mm256_xor_ps(_mm256_set1_ps(-0.0f), a.v)}; }
  static F copysign(F mag, F sgn) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    return {_mm256_or_ps(_mm256_andnot_ps(sign, mag.v), _mm256_and_ps(sign, sgn.v))};
  }
  static M lt(F a, F b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
  static M le(F a, F b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LE_OQ)}; }
  static M ge(F a, F b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_GE_OQ)}; }
  static M is_nan(F a) { return {_mm256_cmp_ps(a.v, a.v, _CMP_UNORD_Q)}; }
  static F select(M m, F a, F b) { return {_mm256_blendv_ps(b.v, a.v, m.v)}; }

  static I to_int(F a) { return {_mm256_cvtps_epi32(a.v)}; }
  static I sar1(I a) { return {_mm256_srai_epi32(a.v, 1)}; }
  static I sub(I a, I b) { return {_mm256_sub_epi32(a.v, b.v)}; }
  static F pow2i(I n) {
    return {_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n.v, _mm256_set1_epi32(127)), 23))};
  }

  static D cvt_lo(F a) { return {_mm256_cvtps_pd(_mm256_castps256_ps128(a.v))}; }
  static D cvt_hi(F a) { return {_mm256_cvtps_pd(_mm256_extractf128_ps(a.v, 1))}; }
  static D add(D a, D b) { return {_mm256_add_pd(a.v, b.v)}; }
  static D sub(D a, D b) { return {_mm256_sub_pd(a.v, b.v)}; }
  static D fmadd(D a, D b, D c) { return {_mm256_fmadd_pd(a.v, b.v, c.v)}; }
  static D set1d(double x) { return {_mm256_set1_pd(x)}; }
  static D abs(D a) { return {_mm256_andnot_pd(_mm256_set1_pd(-0.0), a.v)}; }
  static double hsum(D a) {
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a.v), _mm256_extractf128_pd(a.v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }
  static float hmax(F a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmin(F a) {
    __m128 s = _mm_min_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_min_ps(s, _mm_movehl_ps(s, s));
    s = _mm_min_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static bool any(M m) { return _mm256_movemask_ps(m.v) != 0; }
  static M or_(M a, M b) { return {_mm256_or_ps(a.v, b.v)}; }
};

}  // namespace
}  // namespace sdx::cpu::simd
