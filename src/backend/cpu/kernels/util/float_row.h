// Functors with a float row form or a lane form, shared by the element-wise kernels (elementwise.h)
// and the fused ops' epilogues (activation.h).
//
// A functor that also has `void row(const float* x, float* y, int64_t n) const` computes whole
// float ranges on the vector kernels (simd/vector_ops.h). Its float operator() must then give
// the bits of the row form, which apply_row1 does (an exact formula, Relu's, gives them by itself):
//
//   struct TanhOp {
//     void row(const float* x, float* y, int64_t n) const { simd::tanh(x, y, n); }
//     template <typename C> C operator()(C x) const {
//       if constexpr (std::is_same_v<C, float>) return apply_row1(*this, x);
//       else return std::tanh(x);
//     }
//   };
//
// A functor whose formula is a few exact IEEE operations and selects (Relu, LeakyRelu, Clip,
// HardSigmoid, HardSwish) may instead have a lane form, `template <typename V> V lanes(V v) const`
// over a 16-byte GCC/Clang vector of float or double, doing per lane exactly what operator() does
// (the same operations in the same order, the same comparisons, so the same bits, NaN included).
// lane_map runs it branch-free on plain SSE2 (operator() compiles to a branch per element, which
// mispredicts on signed data):
//
//   struct ReluOp {
//     template <typename V> V lanes(V v) const { return v <= V{} ? V{} : v; }
//     template <typename C> C operator()(C x) const { return x <= C(0) ? C(0) : x; }
//   };
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>

namespace sdx::cpu {

template <typename F>
concept HasFloatRow = requires(const F& f, const float* x, float* y, int64_t n) { f.row(x, y, n); };

typedef float FloatLanes4 __attribute__((vector_size(16)));

template <typename F>
concept HasLanes = requires(const F& f, FloatLanes4 v) {
  { f.lanes(v) } -> std::same_as<FloatLanes4>;
};

// A lane functor that declares `static constexpr bool kWideLanes = true` (activation.h's, listed in its
// SDX_WIDE_LANE_FUNCTORS) also runs at the CPU's full vector width: wide_lane_row computes
// y[i] = f(x[i] + bias) for float, i < n, with bias none (b null), b[0] (b_step 0) or b[i] (b_step 1),
// the bits of lane_map and of f's operator() (lane_rows.h). It returns false, having written nothing,
// at the scalar level (then lane_map) or for another b_step.
template <typename F>
concept HasWideLanes = HasLanes<F> && requires { requires F::kWideLanes; };
template <class F>
bool wide_lane_row(const F& f, const float* x, float* y, int64_t n, const float* b, int64_t b_step);

// y[i] = f(x[i]) for float or double, i < n, on 16-byte vectors through f.lanes and the tail through
// f (the same bits); y may equal x.
template <typename T, typename F>
inline void lane_map(const F& f, const T* x, T* y, int64_t n) {
  typedef T V __attribute__((vector_size(16)));
  constexpr int64_t L = static_cast<int64_t>(16 / sizeof(T));
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    v = f.lanes(v);
    std::memcpy(y + i, &v, sizeof(V));
  }
  for (; i < n; ++i) y[i] = f(x[i]);
}

// f(x) for one float through f.row, so it has the bits of a vector lane.
template <typename F>
inline float apply_row1(const F& f, float x) {
  float y;
  f.row(&x, &y, 1);
  return y;
}

}  // namespace sdx::cpu
