// The vector kernels of one instruction-set level, written once over an ISA type S and
// instantiated by kernels_scalar.cc, kernels_avx2.cc and kernels_avx512.cc (internal to simd/).
//
// Everything here is a template on S, whose types live in an anonymous namespace of the
// including file: every instantiation is local to that file and compiled with its flags, so
// the linker never merges an AVX-512 copy into the baseline build. For the same reason only
// builtins are called (no inline library functions).
#pragma once

#include <cstdint>

#include "backend/cpu/simd/kernel_table.h"
#include "backend/cpu/simd/vec_math.h"

namespace sdx::cpu::simd {

// y[i] = f(x[i]); the tail goes through a masked load/store so every element takes the same
// vector path wherever the row is cut.
template <class S, class Fn>
inline void map_row(const float* x, float* y, int64_t n, Fn f) {
  constexpr int64_t L = S::kLanes;
  int64_t i = 0;
  // Four independent vectors per iteration: exp/erf/tanh are long dependency chains, and one vector at a
  // time leaves the FMA pipes waiting on latency.
  for (; i + 4 * L <= n; i += 4 * L) {
    const typename S::F a = f(S::load(x + i)), b = f(S::load(x + i + L));
    const typename S::F c = f(S::load(x + i + 2 * L)), d = f(S::load(x + i + 3 * L));
    S::store(y + i, a);
    S::store(y + i + L, b);
    S::store(y + i + 2 * L, c);
    S::store(y + i + 3 * L, d);
  }
  for (; i + L <= n; i += L) S::store(y + i, f(S::load(x + i)));
  if (i < n) S::store_partial(y + i, f(S::load_partial(x + i, n - i)), n - i);
}

template <class S>
void exp_row(const float* x, float* y, int64_t n) {
  map_row<S>(x, y, n, [](typename S::F v) { return vexp<S>(v); });
}
template <class S>
void erf_row(const float* x, float* y, int64_t n) {
  map_row<S>(x, y, n, [](typename S::F v) { return verf<S>(v); });
}
template <class S>
void tanh_row(const float* x, float* y, int64_t n) {
  map_row<S>(x, y, n, [](typename S::F v) { return vtanh<S>(v); });
}
template <class S>
void sigmoid_row(const float* x, float* y, int64_t n) {
  map_row<S>(x, y, n, [](typename S::F v) { return vsigmoid<S>(v); });
}
template <class S>
void gelu_row(const float* x, float* y, int64_t n) {
  map_row<S>(x, y, n, [](typename S::F v) { return vgelu<S>(v); });
}
template <class S>
void gelu_tanh_row(const float* x, float* y, int64_t n) {
  map_row<S>(x, y, n, [](typename S::F v) { return vgelu_tanh<S>(v); });
}
// Relu: x <= 0 ? +0 : x, a select on an ordered compare (false for NaN), so NaN passes and -0 gives
// +0, ReluOp's bits (activation.h); never max(x, 0), which returns its second operand, 0, for a NaN x.
template <class S>
void relu_row(const float* x, float* y, int64_t n) {
  const typename S::F zero = S::set1(0.0f);
  map_row<S>(x, y, n, [zero](typename S::F v) { return S::select(S::le(v, zero), zero, v); });
}
// x * sigmoid(alpha * x).
template <class S>
void swish_row(const float* x, float* y, int64_t n, float alpha) {
  const typename S::F a = S::set1(alpha);
  map_row<S>(x, y, n, [a](typename S::F v) { return S::mul(v, vsigmoid<S>(S::mul(a, v))); });
}

// Binary arithmetic (Op: 0 add, 1 sub, 2 mul, 3 div). Exact IEEE operations, so the scalar
// tail gives the bits a vector lane would.
template <class S, int Op>
inline typename S::F binop(typename S::F a, typename S::F b) {
  if constexpr (Op == 0) return S::add(a, b);
  else if constexpr (Op == 1) return S::sub(a, b);
  else if constexpr (Op == 2) return S::mul(a, b);
  else return S::div(a, b);
}
template <class S, int Op>
inline float binop1(float a, float b) {
  if constexpr (Op == 0) return a + b;
  else if constexpr (Op == 1) return a - b;
  else if constexpr (Op == 2) return a * b;
  else return a / b;
}
template <class S, int Op>
void binary_vv(const float* a, const float* b, float* y, int64_t n) {
  constexpr int64_t L = S::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L) S::store(y + i, binop<S, Op>(S::load(a + i), S::load(b + i)));
  for (; i < n; ++i) y[i] = binop1<S, Op>(a[i], b[i]);
}
template <class S, int Op>
void binary_vs(const float* a, const float* b, float* y, int64_t n) {
  constexpr int64_t L = S::kLanes;
  const float s = b[0];
  const typename S::F bv = S::set1(s);
  int64_t i = 0;
  for (; i + L <= n; i += L) S::store(y + i, binop<S, Op>(S::load(a + i), bv));
  for (; i < n; ++i) y[i] = binop1<S, Op>(a[i], s);
}
template <class S, int Op>
void binary_sv(const float* a, const float* b, float* y, int64_t n) {
  constexpr int64_t L = S::kLanes;
  const float s = a[0];
  const typename S::F av = S::set1(s);
  int64_t i = 0;
  for (; i + L <= n; i += L) S::store(y + i, binop<S, Op>(av, S::load(b + i)));
  for (; i < n; ++i) y[i] = binop1<S, Op>(s, b[i]);
}

// ---- Row reductions: one thread, a fixed order (lanes, then the tail) ----------------------

// Largest value, NaN ignored (-inf for an empty or all-NaN row): the max Softmax shifts by.
template <class S>
float max_ignoring_nan(const float* x, int64_t n) {
  constexpr int64_t L = S::kLanes;
  // Four accumulators: max's latency, not its throughput, bounded one chain. A NaN load keeps the
  // accumulator, so none holds a NaN and combining them needs no care.
  typename S::F m = S::set1(-__builtin_inff()), m1 = m, m2 = m, m3 = m;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    m = S::max(S::load(x + i), m);
    m1 = S::max(S::load(x + i + L), m1);
    m2 = S::max(S::load(x + i + 2 * L), m2);
    m3 = S::max(S::load(x + i + 3 * L), m3);
  }
  for (; i + L <= n; i += L) m = S::max(S::load(x + i), m);
  m = S::max(S::max(m, m1), S::max(m2, m3));
  float r = S::hmax(m);
  for (; i < n; ++i) r = x[i] > r ? x[i] : r;
  return r;
}

// Whether a float vector widens to two double vectors (cvt_lo, cvt_hi); the one-lane fallback
// has only cvt_lo.
template <class S>
inline constexpr bool kTwoHalves = S::kLanes > 1;

template <class S>
double row_sum(const float* x, int64_t n) {
  constexpr int64_t L = S::kLanes;
  typename S::D a0 = S::set1d(0.0), a1 = S::set1d(0.0);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const typename S::F v = S::load(x + i);
    a0 = S::add(a0, S::cvt_lo(v));
    if constexpr (kTwoHalves<S>) a1 = S::add(a1, S::cvt_hi(v));
  }
  double s = S::hsum(S::add(a0, a1));
  for (; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
}
template <class S>
double row_sum_squares(const float* x, int64_t n) {
  constexpr int64_t L = S::kLanes;
  typename S::D a0 = S::set1d(0.0), a1 = S::set1d(0.0);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const typename S::F v = S::load(x + i);
    const typename S::D lo = S::cvt_lo(v);
    a0 = S::fmadd(lo, lo, a0);
    if constexpr (kTwoHalves<S>) {
      const typename S::D hi = S::cvt_hi(v);
      a1 = S::fmadd(hi, hi, a1);
    }
  }
  double s = S::hsum(S::add(a0, a1));
  for (; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}
template <class S>
double row_sum_abs(const float* x, int64_t n) {
  constexpr int64_t L = S::kLanes;
  typename S::D a0 = S::set1d(0.0), a1 = S::set1d(0.0);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const typename S::F v = S::abs(S::load(x + i));
    a0 = S::add(a0, S::cvt_lo(v));
    if constexpr (kTwoHalves<S>) a1 = S::add(a1, S::cvt_hi(v));
  }
  double s = S::hsum(S::add(a0, a1));
  for (; i < n; ++i) s += static_cast<double>(x[i] < 0 ? -x[i] : x[i]);
  return s;
}

// Max / min with NaN propagating (the first NaN of the row is returned), as ReduceMax/Min do.
template <class S, bool kMax>
float row_extreme(const float* x, int64_t n) {
  constexpr int64_t L = S::kLanes;
  typename S::F m = S::set1(kMax ? -__builtin_inff() : __builtin_inff());
  typename S::M nan = S::lt(m, m);  // all false
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const typename S::F v = S::load(x + i);
    nan = S::or_(nan, S::is_nan(v));
    m = kMax ? S::max(v, m) : S::min(v, m);
  }
  float r = kMax ? S::hmax(m) : S::hmin(m);
  bool any_nan = S::any(nan);
  for (; i < n; ++i) {
    any_nan = any_nan || x[i] != x[i];
    if (kMax) r = x[i] > r ? x[i] : r;
    else r = x[i] < r ? x[i] : r;
  }
  if (any_nan)
    for (i = 0; i < n; ++i)
      if (x[i] != x[i]) return x[i];
  return r;
}

// ---- Softmax / LogSoftmax of one row -----------------------------------------------------
// max (NaN ignored), e = exp(x - max) in float, their sum in double, then e / sum (as e times
// the float of 1 / sum) or x - (max + log(sum)). The sum is taken as the exponentials are made
// (one pass fewer): four vectors at a time added in float (each e <= 1, so 4 terms lose at most
// 2 ulp of a value <= 4), that vector widened into two double accumulators; a tail's elements are
// added one by one in double. 1536 rows of 128 (attention at seq 128, 12 heads) on AVX-512, with the max's
// four accumulators: 125-160 -> 117 us (a loop over simd::softmax_row, 3 runs each).

template <class S, bool kLog>
void softmax_row(const float* x, float* y, int64_t n) {
  constexpr int64_t L = S::kLanes;
  using F = typename S::F;
  const float m = max_ignoring_nan<S>(x, n);
  const F mv = S::set1(m);
  typename S::D a0 = S::set1d(0.0), a1 = S::set1d(0.0);
  auto widen_add = [&](F v) {
    a0 = S::add(a0, S::cvt_lo(v));
    if constexpr (kTwoHalves<S>) a1 = S::add(a1, S::cvt_hi(v));
  };
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const F e0 = vexp<S>(S::sub(S::load(x + i), mv)), e1 = vexp<S>(S::sub(S::load(x + i + L), mv));
    const F e2 = vexp<S>(S::sub(S::load(x + i + 2 * L), mv)), e3 = vexp<S>(S::sub(S::load(x + i + 3 * L), mv));
    S::store(y + i, e0);
    S::store(y + i + L, e1);
    S::store(y + i + 2 * L, e2);
    S::store(y + i + 3 * L, e3);
    widen_add(S::add(S::add(e0, e1), S::add(e2, e3)));
  }
  for (; i + L <= n; i += L) {
    const F e = vexp<S>(S::sub(S::load(x + i), mv));
    S::store(y + i, e);
    widen_add(e);
  }
  double s = S::hsum(S::add(a0, a1));
  if (i < n) {
    S::store_partial(y + i, vexp<S>(S::sub(S::load_partial(x + i, n - i), mv)), n - i);
    for (; i < n; ++i) s += static_cast<double>(y[i]);
  }
  if constexpr (!kLog) {
    const float inv = static_cast<float>(1.0 / s);
    const typename S::F iv = S::set1(inv);
    int64_t i = 0;
    for (; i + L <= n; i += L) S::store(y + i, S::mul(S::load(y + i), iv));
    for (; i < n; ++i) y[i] = y[i] * inv;
  } else {
    const float shift = m + static_cast<float>(__builtin_log(s));
    const typename S::F sv = S::set1(shift);
    int64_t i = 0;
    for (; i + L <= n; i += L) S::store(y + i, S::sub(S::load(x + i), sv));
    for (; i < n; ++i) y[i] = x[i] - shift;
  }
}

// ---- LayerNorm / RMSNorm of one row ------------------------------------------------------
// Statistics in double: mean (0 for RMS), var = mean((x - mean)^2), inv = 1 / sqrt(var + eps);
// then y = (x - mean) * inv * scale + bias in float.

template <class S>
void norm_row(const float* x, float* y, const float* scale, const float* bias, int64_t n, float epsilon, bool rms,
              double* mean_out, double* inv_out) {
  constexpr int64_t L = S::kLanes;
  const double dn = static_cast<double>(n);
  const double mean = rms ? 0.0 : row_sum<S>(x, n) / dn;
  typename S::D a0 = S::set1d(0.0), a1 = S::set1d(0.0);
  const typename S::D md = S::set1d(mean);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const typename S::F v = S::load(x + i);
    const typename S::D d0 = S::sub(S::cvt_lo(v), md);
    a0 = S::fmadd(d0, d0, a0);
    if constexpr (kTwoHalves<S>) {
      const typename S::D d1 = S::sub(S::cvt_hi(v), md);
      a1 = S::fmadd(d1, d1, a1);
    }
  }
  double ss = S::hsum(S::add(a0, a1));
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    ss += d * d;
  }
  const double inv = 1.0 / __builtin_sqrt(ss / dn + static_cast<double>(epsilon));
  if (mean_out) *mean_out = mean;
  if (inv_out) *inv_out = inv;
  const typename S::F cm = S::set1(static_cast<float>(mean)), ci = S::set1(static_cast<float>(inv));
  auto apply = [&](typename S::F v, typename S::F s, typename S::F b) { return S::fmadd(S::mul(S::sub(v, cm), ci), s, b); };
  for (i = 0; i + L <= n; i += L) S::store(y + i, apply(S::load(x + i), S::load(scale + i), S::load(bias + i)));
  if (i < n)
    S::store_partial(y + i, apply(S::load_partial(x + i, n - i), S::load_partial(scale + i, n - i), S::load_partial(bias + i, n - i)),
                     n - i);
}

// v, opaque to the optimizer: a product passed through it is rounded before it is added (these files
// compile with GCC's default -ffp-contract=fast, which would fuse a * b + c into one multiply-add).
template <class F>
inline F rounded(F v) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+v"(v.v));
#endif
  return v;
}

// One LSTM step's element-wise work for one batch entry (lstm_cell in vector_ops.h): each line one IEEE
// operation per element in the order of the unfused cell (rnn_cells.cc), so the bits are its bits.
template <class S>
void lstm_cell(const float* pre, const float* rh, const float* rb, float* c, float* h, int64_t n) {
  using F = typename S::F;
  auto one = [&](int64_t j, auto load, auto store) {
    auto gate = [&](int64_t k) { return S::add(load(pre + k * n + j), S::add(load(rh + k * n + j), load(rb + k * n + j))); };
    const F i = vsigmoid<S>(gate(0)), o = vsigmoid<S>(gate(1)), f = vsigmoid<S>(gate(2)), g = vtanh<S>(gate(3));
    const F cn = S::add(rounded(S::mul(f, load(c + j))), rounded(S::mul(i, g)));
    store(c + j, cn);
    store(h + j, S::mul(o, vtanh<S>(cn)));
  };
  constexpr int64_t L = S::kLanes;
  int64_t j = 0;
  for (; j + L <= n; j += L)
    one(j, [](const float* p) { return S::load(p); }, [](float* p, F v) { S::store(p, v); });
  if (j < n) {
    const int64_t m = n - j;
    one(j, [m](const float* p) { return S::load_partial(p, m); }, [m](float* p, F v) { S::store_partial(p, v, m); });
  }
}

template <class S>
constexpr KernelTable make_table() {
  KernelTable t{};
  t.exp = &exp_row<S>;
  t.erf = &erf_row<S>;
  t.tanh = &tanh_row<S>;
  t.sigmoid = &sigmoid_row<S>;
  t.gelu = &gelu_row<S>;
  t.gelu_tanh = &gelu_tanh_row<S>;
  t.swish = &swish_row<S>;
  t.relu = &relu_row<S>;
  t.binary_vv[0] = &binary_vv<S, 0>;
  t.binary_vv[1] = &binary_vv<S, 1>;
  t.binary_vv[2] = &binary_vv<S, 2>;
  t.binary_vv[3] = &binary_vv<S, 3>;
  t.binary_vs[0] = &binary_vs<S, 0>;
  t.binary_vs[1] = &binary_vs<S, 1>;
  t.binary_vs[2] = &binary_vs<S, 2>;
  t.binary_vs[3] = &binary_vs<S, 3>;
  t.binary_sv[0] = &binary_sv<S, 0>;
  t.binary_sv[1] = &binary_sv<S, 1>;
  t.binary_sv[2] = &binary_sv<S, 2>;
  t.binary_sv[3] = &binary_sv<S, 3>;
  t.softmax_row = &softmax_row<S, false>;
  t.log_softmax_row = &softmax_row<S, true>;
  t.norm_row = &norm_row<S>;
  t.row_sum = &row_sum<S>;
  t.row_sum_squares = &row_sum_squares<S>;
  t.row_sum_abs = &row_sum_abs<S>;
  t.row_max = &row_extreme<S, true>;
  t.row_min = &row_extreme<S, false>;
  t.lstm_cell = &lstm_cell<S>;
  return t;
}

}  // namespace sdx::cpu::simd
