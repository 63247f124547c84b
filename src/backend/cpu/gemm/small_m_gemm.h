// Small-M matrix products: Y[M, N] = X[M, K] W[K, N] for M <= kSmallMMaxRows (a decoder step: M = 1),
// with W in float32, float16 or int8 (per-column scales) read directly from memory.
//
//   // y[1, N] = x[1, K] w16[K, N], split over the session's pool, bias added per chunk
//   SmallMWeights w{WeightType::kFloat16, w16, /*ldw=*/N};
//   small_m_gemm(1, N, K, x, K, w, 1.f, 0.f, y, N, [&](int64_t n0, int64_t n1) { add_bias(y, b, n0, n1); });
//
// At small M every product is a GEMV, bound by the bytes of W read per call; so the kernel streams W
// once (row pairs share each loaded W vector) and keeps the accumulators in registers. float16 and int8
// weights are widened in registers (F16C / sign extension), accumulated in float32.
//
// Arithmetic (the same on every path, so results are bitwise identical between the AVX2 kernel and the
// portable fallback, between thread counts and between M): each output element is one fused
// multiply-add chain over k ascending, acc = fma(x[m, k], w(k, n), acc) from acc = 0, with w(k, n) the
// weight widened exactly to float; then y = acc * scale[n] (int8), y = alpha * y when alpha != 1, and
// y = fma(beta, y_old, y) when beta != 0. A dot product is never split across threads: the pool splits the
// columns in blocks of kSmallMBlock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {

enum class WeightType : uint8_t { kFloat32, kFloat16, kInt8 };

struct SmallMWeights {
  WeightType type = WeightType::kFloat32;
  const void* data = nullptr;    // W [K, N] row-major: float, Float16 bits (uint16_t) or int8_t
  int64_t ldw = 0;               // row stride of W in elements
  const float* scale = nullptr;  // kInt8: per-column scales [N] (y = scale[n] * sum_k x w); else null
};

// The largest M the small-M kernel is used for (beyond, a blocked GEMM re-reads W less often).
inline constexpr int64_t kSmallMMaxRows = 8;
// Columns per block of the parallel split; chunk boundaries are multiples of it.
inline constexpr int64_t kSmallMBlock = 64;

// Columns [n0, n1) of y (row stride ldy) for rows m < M; see the arithmetic above. beta == 0: y is not
// read. Single-threaded.
void small_m_gemm_columns(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w, float alpha,
                          float beta, float* y, int64_t ldy, int64_t n0, int64_t n1);

// Whether cpu::gemm (float32, no transposes) takes the small-M kernel for this shape; sdx.Linear asks
// the same question so that it computes what the unfused MatMul computes.
inline bool small_m_gemm_applies(int64_t M, int64_t N, int64_t K) {
  return M >= 1 && M <= kSmallMMaxRows && N >= 8 && K >= 1;
}

// Whether small_m_gemm_columns uses the AVX2/FMA/F16C kernel on this machine.
bool small_m_gemm_vectorized();

namespace detail {
// The portable kernel (tests compare it with the vectorized one bit for bit).
void small_m_gemm_columns_portable(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w,
                                   float alpha, float beta, float* y, int64_t ldy, int64_t n0, int64_t n1);
// Column blocks per parallel chunk: at least ~32K weights, so a chunk outweighs the hand-off.
inline int64_t small_m_grain(int64_t K) {
  return std::max<int64_t>(1, (int64_t{1} << 15) / (std::max<int64_t>(K, 1) * kSmallMBlock));
}
}  // namespace detail

// All N columns, split over the current thread pool in chunks of whole kSmallMBlock blocks; after a
// chunk's product, epilogue(n0, n1) runs on the same thread while the chunk is in cache (bias,
// activation). The result does not depend on the thread count.
template <typename Epilogue>
void small_m_gemm(int64_t M, int64_t N, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w, float alpha,
                  float beta, float* y, int64_t ldy, Epilogue&& epilogue) {
  if (M <= 0 || N <= 0) return;
  const int64_t blocks = (N + kSmallMBlock - 1) / kSmallMBlock;
  parallel_for(blocks, detail::small_m_grain(K), [&](int64_t b0, int64_t b1) {
    const int64_t n0 = b0 * kSmallMBlock, n1 = std::min(N, b1 * kSmallMBlock);
    small_m_gemm_columns(M, K, x, ldx, w, alpha, beta, y, ldy, n0, n1);
    epilogue(n0, n1);
  });
}

// W repacked once (a bound call's constant weight) as blocks of kSmallMBlock columns, each [K, width]
// contiguous, so the kernel streams memory sequentially instead of 64-column strips of long rows (about
// 1.5x the bandwidth when W comes from L3/DRAM). The arithmetic per element is unchanged: results are
// bitwise those of the unpacked W.
class SmallMPackedWeights {
 public:
  SmallMPackedWeights() = default;
  SmallMPackedWeights(const SmallMWeights& w, int64_t K, int64_t N);
  bool empty() const { return bytes_ == nullptr; }
  // Block b: columns [b * kSmallMBlock, min(N, (b + 1) * kSmallMBlock)) as a [K, width] matrix.
  SmallMWeights block(int64_t b) const {
    const int64_t n0 = b * kSmallMBlock, width = std::min(kSmallMBlock, N_ - n0);
    return SmallMWeights{type_, bytes_.get() + n0 * K_ * elem_bytes_, width, scale_ ? scale_ + n0 : nullptr};
  }

 private:
  WeightType type_ = WeightType::kFloat32;
  int64_t K_ = 0, N_ = 0, elem_bytes_ = 4;
  std::unique_ptr<char[]> bytes_;
  const float* scale_ = nullptr;  // borrowed from the unpacked weights
};

// A packed copy of a constant weight, shared by every bound call that reads the same weight (the 16 steps
// of an unrolled LSTM read one W_ih: one 6.5 MB copy, not 16 that evict each other from the caches; a
// MatMul and an sdx.Linear on one initializer share one too). Keyed by the weight's address, type, row
// stride, shape and scale; an entry lives while a bound call holds it. Thread-safe.
std::shared_ptr<const SmallMPackedWeights> shared_small_m_packed(const SmallMWeights& w, int64_t K, int64_t N);

// Blocks [b0, b1) of packed W for rows m < M (y's column 0 is W's column 0), in ascending order or, with
// descending, from the last (a recurrence alternates, so the blocks read last are still in L2). At one
// row on AVX-512, two blocks at a time. Single-threaded; bitwise what small_m_gemm_columns gives per block.
void small_m_gemm_blocks(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMPackedWeights& w, int64_t b0,
                         int64_t b1, float alpha, float beta, float* y, int64_t ldy, bool descending = false);

// small_m_gemm on packed weights (N, K from `w`'s construction).
template <typename Epilogue>
void small_m_gemm_packed(int64_t M, int64_t N, int64_t K, const float* x, int64_t ldx, const SmallMPackedWeights& w,
                         float alpha, float beta, float* y, int64_t ldy, Epilogue&& epilogue) {
  if (M <= 0 || N <= 0) return;
  const int64_t blocks = (N + kSmallMBlock - 1) / kSmallMBlock;
  parallel_for(blocks, detail::small_m_grain(K), [&](int64_t b0, int64_t b1) {
    small_m_gemm_blocks(M, K, x, ldx, w, b0, b1, alpha, beta, y, ldy);
    epilogue(b0 * kSmallMBlock, std::min(N, b1 * kSmallMBlock));
  });
}

}  // namespace sdx::cpu
