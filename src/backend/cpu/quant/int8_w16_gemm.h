// int8-weight small-M matrix products with X rounded to 16-bit integers (W8A16): Y[M, N] ~= X[M, K] W[K, N]
// with W int8 (symmetric per-column scales, 1 byte per weight in memory), X float32 quantized per row to
// int16 on every call, and exact integer dot products (AVX-512 VNNI vpdpwssd, s16 x s16 pairs -> s32;
// AVX2 vpmaddwd; a portable loop). X keeps ~15 bits, so the error is essentially the weights' own int8
// rounding (as with weight-only int8), at close to the speed of W8A8 (int8_dynamic_gemm.h). Made for a
// decoder step (M = 1..8); any M >= 1 is correct.
//
//   Int8W16Weights w(w8, /*ldw=*/N, K, N, scale);                  // once: packs W, copies scale
//   std::vector<char> scratch(int8_w16_scratch_bytes(M, K));        // once (prepare time)
//   if (int8_w16_applies(K))
//     int8_w16_gemm(M, K, x, K, w, y, N, scratch.data(), [&](int64_t n0, int64_t n1) { add_bias(n0, n1); });
//
// Arithmetic contract (the same on every path, so results are bitwise identical between the VNNI, AVX2 and
// portable kernels, between thread counts, and for a row whatever M is and whichever rows share a tile):
//   Per row m of X:
//   - a = max_k |x[m, k]|, compared as the bit patterns with the sign cleared (detail::row_amax_bits).
//     If some x[m, k] is NaN or +-Inf, s_x = NaN and every q[k] = 0: the whole output row is NaN.
//     Otherwise s_x = a / 32767.f (float division); s_x = 1.f when that is 0 (a zero row, or a below
//     32767 * the smallest denormal: then every q is 0 and the row's output is 0).
//   - q[k] = nearbyint(clamp(x[m, k] / s_x, -32767.f, 32767.f)) as int16 (float division, clamp in float,
//     round half to even: _mm256_div_ps, min/max and _mm256_cvtps_epi32 under the default MXCSR, and
//     std::nearbyint under the default rounding mode).
//   Per output:
//   - acc[m, n] = sum_k q[k] * w[k, n], exact (int64 semantics: |acc| <= K * 32767 * 128). The kernels sum
//     chunks of kInt8W16ChunkK values of k in int32 (exact: see the static_assert in int8_w16_gemm.cc) and
//     add the chunks' sums exactly in double (integers below 2^53).
//   - y[m, n] = float(acc[m, n]) * (s_x * scale[n]): the exact sum rounded once to float (nearest even), the
//     product of the scales in float first, then one float multiply. No FMA anywhere.
// Denormals are not flushed (default MXCSR assumed, as everywhere in sdx).
// A dot product is never split across threads: the pool splits the columns in blocks of kInt8W16Block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/quant/int_gemm_support.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {

// Columns per packed block and per parallel chunk boundary.
inline constexpr int64_t kInt8W16Block = 64;
// Values of k summed in int32 before a chunk's sums are added into the exact totals: 512 k = 256 steps of
// 2 products, each |q * w| <= 32767 * 128, so |sum| <= 2147418112 < 2^31 (int8_w16_gemm.cc asserts it).
inline constexpr int64_t kInt8W16ChunkK = 512;
// The largest K int8_w16_applies accepts: the totals K * 32767 * 128 must stay exact in double (< 2^53,
// i.e. K < 2^31); 2^24 keeps a wide margin and is far beyond any weight matrix that fits in memory.
inline constexpr int64_t kInt8W16MaxK = int64_t{1} << 24;

// W int8 [K, N] (row stride ldw, values in [-127, 127]: -128 is not rejected, it computes exactly but
// breaks the symmetry the scales assume) with per-column scales scale[N], packed once (a bound call's
// constant weight). Owns copies of everything: W and scale may be freed after construction.
//
// Layout: Kp = K rounded up to 2; block b holds columns [64 b, 64 b + 64) as [Kp / 2][64 columns][2 bytes]
// (k = 2p and 2p + 1 of one column adjacent: sign-extended to int16 they form one 32-bit vpdpwssd /
// vpmaddwd lane; 32 bytes = 16 columns widen to one zmm), 64-byte aligned; columns past N and k past K
// are 0. Scales are padded with 0 to whole blocks.
class Int8W16Weights {
 public:
  Int8W16Weights() = default;
  Int8W16Weights(const int8_t* w, int64_t ldw, int64_t K, int64_t N, const float* scale);

  bool empty() const { return packed_ == nullptr; }
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  int64_t padded_k() const { return Kp_; }
  int64_t blocks() const { return (N_ + kInt8W16Block - 1) / kInt8W16Block; }
  // Block b's [Kp / 2][64][2] bytes.
  const int8_t* block(int64_t b) const { return packed_ + b * Kp_ * kInt8W16Block; }
  // Scales indexed by absolute column, readable up to blocks() * 64.
  const float* scale() const { return scale_.data(); }

 private:
  int64_t K_ = 0, N_ = 0, Kp_ = 0;
  std::unique_ptr<int8_t[]> storage_;
  int8_t* packed_ = nullptr;  // 64-byte aligned, inside storage_
  std::vector<float> scale_;
};

// Bytes of scratch int8_w16_gemm needs for M rows of K (quantized rows, padded and aligned, and the
// per-row scales). Any alignment of the scratch pointer is fine.
size_t int8_w16_scratch_bytes(int64_t M, int64_t K);

// Whether the contract's sums stay exact for this K (1 <= K <= kInt8W16MaxK).
inline bool int8_w16_applies(int64_t K) { return K >= 1 && K <= kInt8W16MaxK; }

// X quantized by the contract above: row m's int16 values at q + m * ldq (ldq a multiple of 32, values
// [K, ldq) are 0), its s_x at scale[m].
struct Int8W16Rows {
  const int16_t* q = nullptr;
  int64_t ldq = 0;
  const float* scale = nullptr;
};

namespace detail {
// Quantizes x[M, K] into scratch (int8_w16_scratch_bytes(M, K) bytes). The vector path (kAvx2 and
// kAvx512Vnni both run the AVX2 code) and the portable one give the same values and scales.
Int8W16Rows int8_w16_quantize(IntGemmIsa isa, int64_t M, int64_t K, const float* x, int64_t ldx, void* scratch);
// Column blocks [b0, b1) of y (row stride ldy, y[m, 0] at y + m * ldy) for the M quantized rows on path
// `isa` (one the CPU lacks falls back to the best it has below it). Single-threaded.
void int8_w16_blocks(IntGemmIsa isa, int64_t M, const Int8W16Rows& x, const Int8W16Weights& w, float* y, int64_t ldy,
                     int64_t b0, int64_t b1);
// Column blocks per parallel chunk: at least ~64K weights (~0.8 us with VNNI at M = 1), so a chunk
// outweighs the hand-off (bench/int8_w16_gemv.cc).
inline int64_t int8_w16_grain(int64_t K) {
  return std::max<int64_t>(1, (int64_t{1} << 16) / (std::max<int64_t>(K, 1) * kInt8W16Block));
}
}  // namespace detail

// y[M, N] (row stride ldy) per the contract, N from `w`, K == w.K(); requires int8_w16_applies(K) and
// scratch of int8_w16_scratch_bytes(M, K) bytes. X is quantized once on the calling thread, then the
// column blocks are split over the current thread pool; epilogue(n0, n1) runs on the chunk's thread after
// columns [n0, n1) of all M rows are written (bias, activation). The chunks' ranges cover [0, N) once.
// The path is detail::int_gemm_active_isa() (SDX_CPU_ISA lowers it). Never allocates.
template <typename Epilogue>
void int8_w16_gemm(int64_t M, int64_t K, const float* x, int64_t ldx, const Int8W16Weights& w, float* y, int64_t ldy,
                   void* scratch, Epilogue&& epilogue) {
  const int64_t N = w.N();
  if (M <= 0 || N <= 0) return;
  const detail::IntGemmIsa isa = detail::int_gemm_active_isa();
  const Int8W16Rows xq = detail::int8_w16_quantize(isa, M, K, x, ldx, scratch);
  parallel_for(w.blocks(), detail::int8_w16_grain(K), [&](int64_t b0, int64_t b1) {
    detail::int8_w16_blocks(isa, M, xq, w, y, ldy, b0, b1);
    epilogue(b0 * kInt8W16Block, std::min(N, b1 * kInt8W16Block));
  });
}

}  // namespace sdx::cpu
