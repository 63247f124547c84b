// Vector math for float: exp, erf, tanh, sigmoid and the activations built on them, written once
// over an ISA type S (vec_scalar.h, vec_avx2.h, vec_avx512.h) and compiled once per level by
// kernels_*.cc (internal to simd/).
//
// Accuracy over the whole float range (tests/backend/cpu/simd/vec_math_test.cc checks it against
// double-precision references): exp within 1 ulp (denormal results included), erf and tanh
// within 1.5 ulp, sigmoid within 3 ulp; NaN propagates, infinities give the limits.
//
// The polynomials were fitted for this file (minimax on the stated interval, then rounded to
// float): exp after Cody-Waite reduction to |r| <= ln2/2; erf as x + x P(x^2) below 0.875 and as
// 1 - exp(Q(|x|) - x^2) above, where Q approximates log(erfc(x)) + x^2 on [0.875, 3.92] (erf
// rounds to 1 beyond 3.92); tanh as x + x^3 P(x^2) below 0.625 and 1 - 2 / (exp(2|x|) + 1) above.
// Every lane computes both branches and selects, so there are no per-element branches.
#pragma once

namespace sdx::cpu::simd {

// exp for x in [-104, 88.8] (not NaN). 2^n is applied as two factors, so results down to the
// smallest denormal round once, and n = 128 (x just below the overflow threshold) still works.
template <class S>
inline typename S::F exp_core(typename S::F x) {
  using F = typename S::F;
  const F r = S::sub(S::add(S::mul(x, S::set1(1.44269504088896341f)), S::set1(12582912.f)), S::set1(12582912.f));
  // x - r ln2 in two steps; r * 0.693359375 is exact (9 + 8 significant bits).
  F t = S::fnmadd(r, S::set1(0.693359375f), x);
  t = S::fnmadd(r, S::set1(-2.12194440e-4f), t);
  F p = S::set1(1.3814609264954925e-3f);
  p = S::fmadd(p, t, S::set1(8.3687175065279e-3f));
  p = S::fmadd(p, t, S::set1(4.166838899254799e-2f));
  p = S::fmadd(p, t, S::set1(1.666652113199234e-1f));
  p = S::fmadd(p, t, S::set1(4.999999403953552e-1f));
  const F y = S::add(S::fmadd(p, S::mul(t, t), t), S::set1(1.0f));  // 1 + t + t^2 p(t)
  const typename S::I n = S::to_int(r);
  const typename S::I n1 = S::sar1(n);
  return S::mul(S::mul(y, S::pow2i(n1)), S::pow2i(S::sub(n, n1)));
}

template <class S>
inline typename S::F vexp(typename S::F x) {
  using F = typename S::F;
  // Below -104 the result rounds to 0; from 88.8 on it overflows to inf (as it does for x in
  // (88.7228, 88.8) through the last multiplication).
  const F xc = S::min(S::max(x, S::set1(-104.f)), S::set1(88.8f));
  return S::select(S::is_nan(x), x, exp_core<S>(xc));
}

template <class S>
inline typename S::F verf(typename S::F x) {
  using F = typename S::F;
  const F a = S::abs(x);
  // |x| < 0.875: x + x P(x^2).
  const F x2 = S::mul(x, x);
  F ps = S::set1(8.6753585e-05f);
  ps = S::fmadd(ps, x2, S::set1(-8.211097e-04f));
  ps = S::fmadd(ps, x2, S::set1(5.206747e-03f));
  ps = S::fmadd(ps, x2, S::set1(-2.6861584e-02f));
  ps = S::fmadd(ps, x2, S::set1(1.1283733e-01f));
  ps = S::fmadd(ps, x2, S::set1(-3.7612635e-01f));
  ps = S::fmadd(ps, x2, S::set1(1.2837917e-01f));  // 2 / sqrt(pi) - 1: x is added exactly last
  const F small = S::fmadd(x, ps, x);
  // |x| >= 0.875: 1 - exp(Q(|x|) - x^2), Q in powers of |x| - 1.5.
  const F ac = S::min(a, S::set1(3.92f));
  const F u = S::sub(ac, S::set1(1.5f));
  F q = S::set1(-2.0451229e-05f);
  q = S::fmadd(q, u, S::set1(2.123436e-04f));
  q = S::fmadd(q, u, S::set1(-1.258225e-03f));
  q = S::fmadd(q, u, S::set1(6.008039e-03f));
  q = S::fmadd(q, u, S::set1(-2.582381e-02f));
  q = S::fmadd(q, u, S::set1(1.07359566e-01f));
  q = S::fmadd(q, u, S::set1(-5.088008e-01f));
  q = S::fmadd(q, u, S::set1(-1.134492f));
  const F erfc = exp_core<S>(S::fnmadd(ac, ac, q));
  const F large = S::sub(S::set1(1.0f), erfc);
  const F y = S::copysign(S::select(S::lt(a, S::set1(0.875f)), small, large), x);  // odd; keeps -0
  return S::select(S::is_nan(x), x, y);
}

template <class S>
inline typename S::F vtanh(typename S::F x) {
  using F = typename S::F;
  const F a = S::abs(x);
  // |x| < 0.625: x + x^3 P(x^2).
  const F x2 = S::mul(x, x);
  F p = S::set1(-5.704947e-03f);
  p = S::fmadd(p, x2, S::set1(2.0639053e-02f));
  p = S::fmadd(p, x2, S::set1(-5.3739704e-02f));
  p = S::fmadd(p, x2, S::set1(1.3331442e-01f));
  p = S::fmadd(p, x2, S::set1(-3.333328e-01f));
  const F small = S::fmadd(S::mul(x, x2), p, x);
  // |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1); tanh rounds to 1 beyond 9.1.
  const F ac = S::min(a, S::set1(9.1f));
  const F e = exp_core<S>(S::add(ac, ac));
  const F large = S::sub(S::set1(1.0f), S::div(S::set1(2.0f), S::add(e, S::set1(1.0f))));
  const F y = S::copysign(S::select(S::lt(a, S::set1(0.625f)), small, large), x);  // odd; keeps -0
  return S::select(S::is_nan(x), x, y);
}

// 1 / (1 + exp(-x)), from e = exp(-|x|) so nothing overflows: 1 / (1 + e) for x >= 0,
// e / (1 + e) below.
template <class S>
inline typename S::F vsigmoid(typename S::F x) {
  using F = typename S::F;
  const F e = vexp<S>(S::neg(S::abs(x)));
  const F r = S::div(S::set1(1.0f), S::add(S::set1(1.0f), e));
  return S::select(S::ge(x, S::set1(0.0f)), r, S::mul(e, r));
}

// 0.5 x (1 + erf(x / sqrt(2))): ONNX Gelu, approximate = "none".
template <class S>
inline typename S::F vgelu(typename S::F x) {
  const typename S::F e = verf<S>(S::mul(x, S::set1(0.7071067811865476f)));
  return S::mul(S::mul(S::set1(0.5f), x), S::add(S::set1(1.0f), e));
}

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): ONNX Gelu, approximate = "tanh".
template <class S>
inline typename S::F vgelu_tanh(typename S::F x) {
  using F = typename S::F;
  const F inner = S::mul(S::set1(0.7978845608028654f), S::fmadd(S::mul(S::set1(0.044715f), S::mul(x, x)), x, x));
  return S::mul(S::mul(S::set1(0.5f), x), S::add(S::set1(1.0f), vtanh<S>(inner)));
}

}  // namespace sdx::cpu::simd
