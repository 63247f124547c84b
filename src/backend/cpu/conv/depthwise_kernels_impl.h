// The depthwise loops over a simd level S (see depthwise_kernels.h); included only by
// depthwise_kernels_{scalar,avx2,avx512}.cc, whose S types live in their own anonymous namespaces
// (and which are compiled with -ffp-contract=off, so that an activation's a * x + b rounds as it
// does in the baseline build: FusedConv must equal Conv + activation bit for bit).
//
// NCHW rows(): a block of R output rows x NV vectors of columns keeps R * NV accumulators in
// registers over all taps: four vectors of one row on wide planes, or one or two vectors of four or
// two rows on narrow ones (7x7 or 14x14 planes have a single vector per row, and one chain of
// dependent multiply-adds would wait on latency). pad(): stride 1 copies rows; stride 2 splits each
// row into its even and odd columns with Split2<S> (vector permutes where the level defines them).
//
// Blocked blocked_rows(): a pixel is kBlock channels (1 vector of 16 lanes, 2 of 8, or 16 scalars);
// J output pixels of one row share each tap's weight vector. Interior pixels (every tap inside the
// row) go J at a time without checks, the border ones singly with their own tap range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/conv/depthwise_kernels.h"
#include "backend/cpu/kernels/util/activation.h"

namespace sdx::cpu::dw {

// Splits n pairs (src[2i], src[2i + 1]) into even[i] and odd[i]; returns the pairs it did (a level
// with vector permutes specializes it; the rest go through the scalar loop).
template <class S>
struct Split2 {
  static int64_t run(const float*, int64_t, float*, float*) { return 0; }
};

template <class S>
void split2(const float* src, int64_t n, float* even, float* odd) {
  for (int64_t i = Split2<S>::run(src, n, even, odd); i < n; ++i) {
    even[i] = src[2 * i];
    odd[i] = src[2 * i + 1];
  }
}

// Input row ih (any integer: outside [0, H) a zero row) as one padded row.
template <class S>
void pad_row(const Geometry& g, const float* x, int64_t ih, float* dst) {
  const int64_t rf = g.row_floats();
  if (ih < 0 || ih >= g.H) {
    std::fill(dst, dst + rf, 0.0f);
    return;
  }
  const float* src = x + ih * g.W;
  if (g.stride_w == 1) {
    const int64_t head = std::min(g.pad_l, rf), body = std::max<int64_t>(0, std::min(g.W, rf - head));
    std::fill(dst, dst + head, 0.0f);
    std::memcpy(dst + head, src, static_cast<size_t>(body) * sizeof(float));
    std::fill(dst + head + body, dst + rf, 0.0f);
    return;
  }
  if (g.stride_w == 2) {
    // Input column c sits at padded column c + pad_l: phase (c + pad_l) % 2, index (c + pad_l) / 2.
    const int64_t qe = g.pad_l % 2, qo = (g.pad_l + 1) % 2;
    const int64_t oe = g.pad_l / 2, oo = (g.pad_l + 1) / 2;
    float* pe = dst + qe * g.phase_w;
    float* po = dst + qo * g.phase_w;
    const int64_t ne = std::max<int64_t>(0, std::min((g.W + 1) / 2, g.phase_w - oe));
    const int64_t no = std::max<int64_t>(0, std::min(g.W / 2, g.phase_w - oo));
    const int64_t pairs = std::min(ne, no);  // no <= ne <= no + 1
    std::fill(pe, pe + std::min(oe, g.phase_w), 0.0f);
    std::fill(po, po + std::min(oo, g.phase_w), 0.0f);
    split2<S>(src, pairs, pe + oe, po + oo);
    if (ne > pairs) pe[oe + pairs] = src[2 * pairs];
    std::fill(pe + std::min(oe + ne, g.phase_w), pe + g.phase_w, 0.0f);
    std::fill(po + std::min(oo + no, g.phase_w), po + g.phase_w, 0.0f);
    return;
  }
  for (int64_t q = 0; q < g.stride_w; ++q) {
    float* ph = dst + q * g.phase_w;
    for (int64_t i = 0; i < g.phase_w; ++i) {
      const int64_t col = q + i * g.stride_w - g.pad_l;
      ph[i] = col >= 0 && col < g.W ? src[col] : 0.0f;
    }
  }
}

template <class S>
void pad(const Geometry& g, const float* x, int64_t pr0, int64_t pr1, float* out) {
  for (int64_t pr = pr0; pr < pr1; ++pr) pad_row<S>(g, x, pr - g.pad_t, out + (pr - pr0) * g.row_floats());
}

// The epilogue of one accumulator: + residual (n lanes at r, or null), then the activation's lane
// form (the scalar level: its operator()).
template <class S, class A>
inline typename S::F finish(typename S::F acc, const A& act, const float* r, int64_t n) {
  if (r) acc = S::add(acc, n == S::kLanes ? S::load(r) : S::load_partial(r, n));
  if constexpr (!std::is_same_v<A, IdentityActivation>) {
    if constexpr (S::kLanes == 1) acc.v = act(acc.v);
    else acc.v = act.lanes(acc.v);
  }
  return acc;
}

// NCHW: R rows from oh, NV vectors from column ow (the last one `part` lanes wide when Partial).
template <class S, int R, int NV, bool Partial, class A>
inline void block(const Geometry& g, const float* padded, int64_t pr0, const float* w, float bias, float* y,
                  int64_t oh, int64_t ow, int64_t part, const A& act, const float* res) {
  constexpr int64_t L = S::kLanes;
  using F = typename S::F;
  const int64_t rf = g.row_floats();
  // The loops over r and v are unrolled (the project builds at -O2, which does not), so that acc
  // stays in registers.
  F acc[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = S::set1(bias);
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const float* row = padded + (oh * g.stride_h + kh * g.dil_h - pr0) * rf + ow;
    const float* wk = w + kh * g.KW;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const F wv = S::set1(wk[kw]);
      const float* src = row + g.tap_offset[kw];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const float* s = src + r * g.stride_h * rf;
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          const F xv = Partial && v == NV - 1 ? S::load_partial(s + v * L, part) : S::load(s + v * L);
          acc[r][v] = S::fmadd(xv, wv, acc[r][v]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const int64_t at = (oh + r) * g.OW + ow;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int64_t n = Partial && v == NV - 1 ? part : L;
      const F out = finish<S>(acc[r][v], act, res ? res + at + v * L : nullptr, n);
      if (n == L) S::store(y + at + v * L, out);
      else S::store_partial(y + at + v * L, out, n);
    }
  }
}

// One row group [oh, oh + R) across all columns: blocks of four vectors, then the rest (one to four
// vectors, the last one partial or not) in one block.
template <class S, int R, class A>
void row_group(const Geometry& g, const float* padded, int64_t pr0, const float* w, float bias, float* y,
               int64_t oh, const A& act, const float* res) {
  constexpr int64_t L = S::kLanes;
  int64_t ow = 0;
  for (; ow + 4 * L <= g.OW; ow += 4 * L) block<S, R, 4, false>(g, padded, pr0, w, bias, y, oh, ow, 0, act, res);
  const int64_t rest = g.OW - ow;
  if (rest == 0) return;
  const int64_t nv = (rest + L - 1) / L, part = rest - (nv - 1) * L;
  switch (nv * 2 + (part != L ? 1 : 0)) {
    case 2: block<S, R, 1, false>(g, padded, pr0, w, bias, y, oh, ow, 0, act, res); break;
    case 3: block<S, R, 1, true>(g, padded, pr0, w, bias, y, oh, ow, part, act, res); break;
    case 4: block<S, R, 2, false>(g, padded, pr0, w, bias, y, oh, ow, 0, act, res); break;
    case 5: block<S, R, 2, true>(g, padded, pr0, w, bias, y, oh, ow, part, act, res); break;
    case 6: block<S, R, 3, false>(g, padded, pr0, w, bias, y, oh, ow, 0, act, res); break;
    case 7: block<S, R, 3, true>(g, padded, pr0, w, bias, y, oh, ow, part, act, res); break;
    default: block<S, R, 4, true>(g, padded, pr0, w, bias, y, oh, ow, part, act, res); break;  // 9
  }
}

template <class S, class A>
void rows_with(const Geometry& g, const float* padded, int64_t pr0, const float* w, float bias, float* y, int64_t oh0,
               int64_t oh1, const A& act, const float* res) {
  constexpr int64_t L = S::kLanes;
  // Rows per group: about four vectors in flight.
  const int64_t vecs = (g.OW + L - 1) / L;
  int64_t oh = oh0;
  if (vecs == 1)
    for (; oh + 4 <= oh1; oh += 4) row_group<S, 4>(g, padded, pr0, w, bias, y, oh, act, res);
  if (vecs <= 2)
    for (; oh + 2 <= oh1; oh += 2) row_group<S, 2>(g, padded, pr0, w, bias, y, oh, act, res);
  for (; oh < oh1; ++oh) row_group<S, 1>(g, padded, pr0, w, bias, y, oh, act, res);
}

// The activation's lane form when it has one (then true), else none (false: the caller applies it).
template <class Body>
bool with_lane_activation(const FusedActivation& act, Body&& body) {
  return act.visit([&](auto f) {
    if constexpr (HasLanes<decltype(f)>) {
      body(f);
      return true;
    } else {
      body(IdentityActivation{});
      return false;
    }
  });
}

template <class S>
bool rows(const Geometry& g, const float* padded, int64_t pr0, const float* w, float bias, float* y, int64_t oh0,
          int64_t oh1, const FusedActivation& act, const float* res) {
  return with_lane_activation(act, [&](const auto& f) { rows_with<S>(g, padded, pr0, w, bias, y, oh0, oh1, f, res); });
}

// Blocked: J pixels of row oh from column ow, taps kw in [kw0, kw1) (the interior: all of them).
template <class S, int J, class A>
inline void pixels(const Geometry& g, const float* x, const float* w, const typename S::F* bias, float* y, int64_t oh,
                   int64_t ow, int64_t kh0, int64_t kh1, int64_t kw0, int64_t kw1, const A& act, const float* res) {
  constexpr int64_t L = S::kLanes;
  constexpr int P = static_cast<int>(kBlock / L);  // vectors per pixel
  using F = typename S::F;
  F acc[J][P];
#pragma GCC unroll 8
  for (int j = 0; j < J; ++j)
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[j][p] = bias[p];
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const float* row = x + (oh * g.stride_h - g.pad_t + kh * g.dil_h) * g.W * kBlock;
    const float* wk = w + kh * g.KW * kBlock;
    for (int64_t kw = kw0; kw < kw1; ++kw) {
      F wv[P];
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) wv[p] = S::load(wk + kw * kBlock + p * L);
      const float* src = row + (ow * g.stride_w - g.pad_l + kw * g.dil_w) * kBlock;
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j)
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p)
          acc[j][p] = S::fmadd(S::load(src + j * g.stride_w * kBlock + p * L), wv[p], acc[j][p]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < J; ++j) {
    const int64_t at = (oh * g.OW + ow + j) * kBlock;
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p)
      S::store(y + at + p * L, finish<S>(acc[j][p], act, res ? res + at + p * L : nullptr, L));
  }
}

template <class S, class A>
void blocked_rows_with(const Geometry& g, const float* x, const float* w, const float* bias, float* y, int64_t oh0,
                       int64_t oh1, const A& act, const float* res) {
  constexpr int64_t L = S::kLanes;
  constexpr int P = static_cast<int>(kBlock / L);
  constexpr int J = P == 1 ? 8 : P == 2 ? 4 : 1;  // pixels per interior block
  typename S::F b[P];
  for (int p = 0; p < P; ++p) b[p] = bias ? S::load(bias + p * L) : S::set1(0.0f);
  // Pixels [lo, hi) read only columns inside the row with every tap.
  const int64_t lo = std::min(g.OW, (g.pad_l + g.stride_w - 1) / g.stride_w);
  const int64_t last = g.W - 1 + g.pad_l - (g.KW - 1) * g.dil_w;
  const int64_t hi = std::max(lo, std::min(g.OW, last < 0 ? 0 : last / g.stride_w + 1));
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const int64_t base = oh * g.stride_h - g.pad_t;
    const int64_t kh0 = base >= 0 ? 0 : (-base + g.dil_h - 1) / g.dil_h;
    const int64_t kh1 = base >= g.H ? 0 : std::min(g.KH, (g.H - 1 - base) / g.dil_h + 1);
    auto border = [&](int64_t ow) {
      const int64_t col = ow * g.stride_w - g.pad_l;
      const int64_t kw0 = col >= 0 ? 0 : (-col + g.dil_w - 1) / g.dil_w;
      const int64_t kw1 = col >= g.W ? 0 : std::min(g.KW, (g.W - 1 - col) / g.dil_w + 1);
      pixels<S, 1>(g, x, w, b, y, oh, ow, kh0, kh1, kw0, std::max(kw0, kw1), act, res);
    };
    int64_t ow = 0;
    for (; ow < lo; ++ow) border(ow);
    for (; ow + J <= hi; ow += J) pixels<S, J>(g, x, w, b, y, oh, ow, kh0, kh1, 0, g.KW, act, res);
    for (; ow < hi; ++ow) pixels<S, 1>(g, x, w, b, y, oh, ow, kh0, kh1, 0, g.KW, act, res);
    for (; ow < g.OW; ++ow) border(ow);
  }
}

template <class S>
bool blocked_rows(const Geometry& g, const float* x, const float* w, const float* bias, float* y, int64_t oh0,
                  int64_t oh1, const FusedActivation& act, const float* res) {
  return with_lane_activation(act, [&](const auto& f) { blocked_rows_with<S>(g, x, w, bias, y, oh0, oh1, f, res); });
}

template <class S>
constexpr Kernels make_kernels() {
  return Kernels{&pad<S>, &rows<S>, &blocked_rows<S>};
}

}  // namespace sdx::cpu::dw
