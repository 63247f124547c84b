// The streamed softmax shared by the attention kernels (sdx.Attention in kernels/fused_attention.cc,
// sdx.PagedAttention in kernels/paged_attention.cc): a chunk of keys at a time is folded into the running
// row maximum m, row sum l and the output rows y (FlashAttention-style, see fused_attention.cc's header):
//
//   s = scale * Q_rows . K_chunk^T (+ the caller's mask, via `prepare`)
//   m' = max(m, rowmax(s)); p = exp(s - m');  l = l * exp(m - m') + rowsum(p);  y = y * exp(m - m') + p . V_chunk
//
//   begin_rows(y, mq, dv, mx, sum);
//   for each chunk: fold_chunk(q, mq, d, dv, k, v, nk, scale, prepare, scratch..., y);
//   finish_rows(y, mq, dv, sum, skip);
//
// K and V rows of one chunk are contiguous (row strides d and dv). Keys after a row's `visible` count
// (which prepare returns, after applying its mask to the row's scores) get p = 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/cpu/gemm/dot_rows.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "backend/cpu/simd/vector_ops.h"
#include "core/status.h"
#include "core/tensor.h"

namespace sdx::cpu::attention {

enum class MaskKind { kNone, kBool, kAdditive };

// A mask's element strides once broadcast to the scores' [B, H, S_q, S_kv] (0 on broadcast dims).
struct MaskLayout {
  MaskKind kind = MaskKind::kNone;
  int64_t sb = 0, sh = 0, sq = 0, sk = 0;
};

// The layout of `mask` (bool, or `additive` elements) against scores of shape `full`; an error naming `op`
// when it has another type, more than 4 dims, or a dim that is neither 1 nor the scores'.
inline Result<MaskLayout> mask_layout(const Tensor& mask, DType additive, const int64_t full[4], const char* op) {
  MaskLayout m;
  if (mask.dtype() == DType::kBool) m.kind = MaskKind::kBool;
  else if (mask.dtype() == additive) m.kind = MaskKind::kAdditive;
  else return invalid_argument(std::string(op) + ": the mask must be bool or " + dtype_name(additive));
  const int r = mask.rank();
  if (r > 4) return invalid_argument(std::string(op) + ": the mask has rank > 4: " + mask.shape().to_string());
  int64_t stride[4] = {0, 0, 0, 0}, step = 1;
  for (int a = 3; a >= 0; --a) {
    const int md = a - (4 - r);
    if (md < 0) continue;
    const int64_t dim = mask.shape()[md];
    if (dim != full[a] && dim != 1)
      return invalid_argument(std::string(op) + ": mask " + mask.shape().to_string() +
                              " does not broadcast to the scores' shape [" + std::to_string(full[0]) + ", " +
                              std::to_string(full[1]) + ", " + std::to_string(full[2]) + ", " +
                              std::to_string(full[3]) + "]");
    stride[a] = dim == 1 ? 0 : step;
    step *= dim;
  }
  m.sb = stride[0];
  m.sh = stride[1];
  m.sq = stride[2];
  m.sk = stride[3];
  return m;
}

template <typename T>
T exp_t(T v) {
  if constexpr (std::is_same_v<T, float>)
    return fast_expf(v);
  else
    return std::exp(v);
}

// Max of row[0, n), n >= 1, in eight independent lanes so the loop vectorizes. A NaN is not propagated
// here; it reaches the output through exp and the row sum instead.
template <typename T>
T row_max(const T* __restrict row, int64_t n) {
  T m8[8];
  for (T& v : m8) v = row[0];
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) m8[l] = row[j + l] > m8[l] ? row[j + l] : m8[l];
  T m = m8[0];
  for (int l = 1; l < 8; ++l) m = m8[l] > m ? m8[l] : m;
  for (; j < n; ++j) m = row[j] > m ? row[j] : m;
  return m;
}

// Sum of row[0, n) in double, four accumulators (the order Softmax uses).
template <typename T>
double row_sum(const T* __restrict row, int64_t n) {
  double s4[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (int l = 0; l < 4; ++l) s4[l] += static_cast<double>(row[j + l]);
  double s = (s4[0] + s4[1]) + (s4[2] + s4[3]);
  for (; j < n; ++j) s += static_cast<double>(row[j]);
  return s;
}

// y[c] *= a for c < n (vectorized for float: the same bits as the scalar loop).
template <typename T>
void scale_row(T* y, T a, int64_t n) {
  if constexpr (std::is_same_v<T, float>) simd::binary_vs(simd::BinaryOp::kMul, y, a, y, n);
  else
    for (int64_t c = 0; c < n; ++c) y[c] *= a;
}

template <typename T>
void begin_rows(T* yrows, int64_t mq, int64_t dv, T* mx, double* sum) {
  std::fill(yrows, yrows + mq * dv, T(0));
  std::fill(mx, mx + mq, -std::numeric_limits<T>::infinity());
  std::fill(sum, sum + mq, 0.0);
}

// Folds nk keys into query rows [0, mq). sc: an mq x nk score scratch; ws: gemm workspace for
// (nk x d) and (dv x nk) products. prepare(r, row) applies the mask to row r's nk scores and returns how
// many of them (a prefix) the row may see.
template <typename T, typename Prepare>
void fold_chunk(const T* q, int64_t mq, int64_t d, int64_t dv, const T* k, const T* v, int64_t nk, T scale,
                Prepare&& prepare, T* sc, T* mx, double* sum, T* ws, T* yrows) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  if constexpr (std::is_same_v<T, float>) {
    if (mq == 1)  // a decode step's one query row: dot products, no GEMM set-up
      dot_rows(q, k, d, nk, d, scale, sc);
    else
      gemm(false, true, mq, nk, d, scale, q, d, k, d, T(0), sc, nk, ws);
  } else {
    gemm(false, true, mq, nk, d, scale, q, d, k, d, T(0), sc, nk, ws);
  }
  for (int64_t r = 0; r < mq; ++r) {
    T* row = sc + r * nk;
    const int64_t visible = prepare(r, row);
    std::fill(row + visible, row + nk, T(0));  // left out: p = 0
    if (visible == 0) continue;
    const T block_max = row_max(row, visible);
    const T m_new = block_max > mx[r] ? block_max : mx[r];
    const T ref = m_new == kNegInf ? T(0) : m_new;
    const T alpha = exp_t<T>(mx[r] - ref);  // 0 while nothing was accumulated (mx = -inf)
    if constexpr (std::is_same_v<T, float>) {
      // Vectorized (AVX-512/AVX2 at run time); the same bits as the scalar row[j] - ref.
      simd::binary_vs(simd::BinaryOp::kSub, row, ref, row, visible);
      simd::exp(row, row, visible);
    } else {
      for (int64_t j = 0; j < visible; ++j) row[j] = exp_t<T>(row[j] - ref);
    }
    const double block_sum = row_sum(row, visible);
    if (alpha != T(1)) scale_row(yrows + r * dv, alpha, dv);
    sum[r] = sum[r] * static_cast<double>(alpha) + block_sum;
    mx[r] = m_new;
  }
  gemm(false, false, mq, dv, nk, T(1), sc, nk, v, dv, T(1), yrows, dv, ws);
}

// y_r /= l_r for the rows skip(r) does not leave at zero (a row that saw no key).
template <typename T, typename Skip>
void finish_rows(T* yrows, int64_t mq, int64_t dv, const double* sum, Skip&& skip) {
  for (int64_t r = 0; r < mq; ++r) {
    if (skip(r)) continue;
    const T inv = static_cast<T>(1.0 / sum[r]);  // sum 0 (all scores -inf): NaN, as Softmax gives
    scale_row(yrows + r * dv, inv, dv);
  }
}

}  // namespace sdx::cpu::attention
