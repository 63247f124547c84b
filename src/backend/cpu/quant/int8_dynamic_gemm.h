// Dynamically quantized int8 small-M matrix products (W8A8, like onnxruntime's quantize_dynamic):
// Y[M, N] ~= X[M, K] W[K, N] with W int8 (symmetric per-column scales), X float32 quantized per row to
// 8 bits on every call, and integer dot products (AVX-512 VNNI vpdpbusd, u8 x s8 -> s32; AVX2 vpmaddwd on
// bytes widened to 16 bits; a portable loop). Made for a decoder step (M = 1..8); any M >= 1 is correct.
//
//   Int8DynamicWeights w(w8, /*ldw=*/N, K, N, scale);                // once: packs W, copies scale
//   std::vector<char> scratch(int8_dynamic_scratch_bytes(M, K));      // once (prepare time)
//   if (int8_dynamic_applies(K))
//     int8_dynamic_gemm(M, K, x, K, w, y, N, scratch.data(), [&](int64_t n0, int64_t n1) { add_bias(n0, n1); });
//
// Arithmetic contract (the same on every path, so results are bitwise identical between the VNNI, AVX2 and
// portable kernels, between thread counts, and for a row whatever M is and whichever rows share a tile):
//   Per row m of X:
//   - a = max_k |x[m, k]|, compared as floats (equivalently as the bit patterns with the sign cleared).
//     If some x[m, k] is NaN or +-Inf, s_x = NaN and every q[k] = 0: the whole output row is NaN.
//     Otherwise s_x = a / 127.f (float division); s_x = 1.f when that is 0 (a zero row, or a below
//     127 * the smallest denormal: then every q is 0 and the row's output is 0).
//   - q[k] = nearbyint(clamp(x[m, k] / s_x, -127.f, 127.f)) (float division, clamp in float, round half to
//     even: what _mm256_div_ps, min/max and _mm256_cvtps_epi32 do under the default MXCSR, and std::nearbyint
//     under the default rounding mode), stored as the byte q + 128 (1..255).
//   Per output:
//   - acc[m, n] = sum_k q[k] * w[k, n], exact in int32 (computed as sum_k (q[k] + 128) w[k, n] - 128 colsum[n]
//     with colsum[n] = sum_k w[k, n] from the packing; exact while int8_dynamic_applies(K)).
//   - y[m, n] = float(acc[m, n]) * (s_x * scale[n]): int32 -> float rounded to nearest even, the product of the
//     scales in float first, then one float multiply. No FMA anywhere.
// Denormals are not flushed (default MXCSR assumed, as everywhere in sdx).
// A dot product is never split across threads: the pool splits the columns in blocks of kInt8DynamicBlock.
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
inline constexpr int64_t kInt8DynamicBlock = 64;
// The largest K int8_dynamic_applies accepts: sum_k (q + 128) w <= K * 255 * 127 stays below 2^31 / 2.
inline constexpr int64_t kInt8DynamicMaxK = int64_t{1} << 15;

// W int8 [K, N] (row stride ldw, values in [-127, 127]: -128 is not rejected, it computes exactly but
// breaks the symmetry the scales assume) with per-column scales scale[N], packed once (a bound call's
// constant weight). Owns copies of everything: W and scale may be freed after construction.
//
// Layout: Kp = K rounded up to 4; block b holds columns [64 b, 64 b + 64) as [Kp / 4][64 columns][4 bytes]
// (the 4 consecutive k of one column adjacent: one vpdpbusd lane), 64-byte aligned; columns past N and k
// past K are 0. Per column (padded to whole blocks with 0): colsum = sum_k w[k, n], corr = 128 * colsum
// and the scale.
class Int8DynamicWeights {
 public:
  Int8DynamicWeights() = default;
  Int8DynamicWeights(const int8_t* w, int64_t ldw, int64_t K, int64_t N, const float* scale);

  bool empty() const { return packed_ == nullptr; }
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  int64_t padded_k() const { return Kp_; }
  int64_t blocks() const { return (N_ + kInt8DynamicBlock - 1) / kInt8DynamicBlock; }
  // Block b's [Kp / 4][64][4] bytes.
  const int8_t* block(int64_t b) const { return packed_ + b * Kp_ * kInt8DynamicBlock; }
  // 128 * column sums and scales, indexed by absolute column, readable up to blocks() * 64.
  const int32_t* corr() const { return corr_.data(); }
  const int32_t* colsum() const { return colsum_.data(); }
  const float* scale() const { return scale_.data(); }

 private:
  int64_t K_ = 0, N_ = 0, Kp_ = 0;
  std::unique_ptr<int8_t[]> storage_;
  int8_t* packed_ = nullptr;  // 64-byte aligned, inside storage_
  std::vector<int32_t> corr_, colsum_;
  std::vector<float> scale_;
};

// Bytes of scratch int8_dynamic_gemm needs for M rows of K (quantized rows, padded and aligned, and the
// per-row scales). Any alignment of the scratch pointer is fine.
size_t int8_dynamic_scratch_bytes(int64_t M, int64_t K);

// Whether int32 accumulation is exact for this K (1 <= K <= kInt8DynamicMaxK).
inline bool int8_dynamic_applies(int64_t K) { return K >= 1 && K <= kInt8DynamicMaxK; }

// Whether the AVX-512 VNNI kernel runs on this machine (CPU support, not lowered by SDX_CPU_ISA).
bool int8_dynamic_vnni();

// X quantized by the contract above: row m's bytes at q + m * ldq (ldq a multiple of 64, bytes [K, Kp)
// are 128), its s_x at scale[m].
// zero: null for that contract (every row's zero point is 128, the correction w.corr()); or per-row zero
// points, for rows quantized asymmetrically by a caller (uint8_dynamic_product.h): row m's integers are
// then its bytes minus zero[m], and the kernels subtract zero[m] * colsum[n] instead of corr[n]
// (modular int32 arithmetic, exact while int8_dynamic_applies(K)). Bytes [K, Kp) may then hold anything.
struct Int8DynamicRows {
  const uint8_t* q = nullptr;
  int64_t ldq = 0;
  const float* scale = nullptr;
  const int32_t* zero = nullptr;
};

namespace detail {
// The paths are those of every integer GEMM (int_gemm_support.h).
using Int8DynamicIsa = IntGemmIsa;
// One row's s_x from its largest |x| bit pattern (sign cleared), with the padding bytes [K, ldq) of qr set
// to 128. False for a row holding Inf/NaN: *row_scale = NaN and every byte 128 (nothing to quantize);
// else *row_scale = *s = s_x and the caller quantizes the row with *s.
bool int8_dynamic_row_scale(uint32_t amax_bits, uint8_t* qr, int64_t K, int64_t ldq, float* row_scale, float* s);
// Whether `isa` can run on this CPU.
inline bool int8_dynamic_isa_supported(Int8DynamicIsa isa) { return int_gemm_isa_supported(isa); }
// The path int8_dynamic_gemm takes now: the best supported one, lowered by simd::active_isa()
// (SDX_CPU_ISA=scalar|avx2); all paths give the same bits.
inline Int8DynamicIsa int8_dynamic_active_isa() { return int_gemm_active_isa(); }
// Quantizes x[M, K] into scratch (int8_dynamic_scratch_bytes(M, K) bytes). The vector path (kAvx2 and
// kAvx512Vnni both run the AVX2 code) and the portable one give the same bytes and scales.
Int8DynamicRows int8_dynamic_quantize(Int8DynamicIsa isa, int64_t M, int64_t K, const float* x, int64_t ldx,
                                      void* scratch);
// Column blocks [b0, b1) of y (row stride ldy, y[m, 0] at y + m * ldy) for the M quantized rows. Single-threaded.
void int8_dynamic_blocks(Int8DynamicIsa isa, int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w,
                         float* y, int64_t ldy, int64_t b0, int64_t b1);
// The same blocks' exact integer sums: y[m, n] (int32, row stride ldy) = sum_k q[m, k] w[k, n] - zero[m] *
// colsum[n] (x.zero required: the rows' zero points; modular int32, exact while int8_dynamic_applies(K)).
// x.scale and the weights' scales are not read. Single-threaded; the paths give the same values.
void int8_integer_blocks(Int8DynamicIsa isa, int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w,
                         int32_t* y, int64_t ldy, int64_t b0, int64_t b1);
// Column blocks per parallel chunk: at least ~64K weights (~0.6 us with VNNI), so a chunk outweighs the
// hand-off (measured on Zen 4: a 256 x 256 product split in two chunks of 32K was slower than one).
inline int64_t int8_dynamic_grain(int64_t K) {
  return std::max<int64_t>(1, (int64_t{1} << 16) / (std::max<int64_t>(K, 1) * kInt8DynamicBlock));
}
}  // namespace detail

// y[M, N] (row stride ldy) per the contract, N from `w`, K == w.K(); requires int8_dynamic_applies(K) and
// scratch of int8_dynamic_scratch_bytes(M, K) bytes. X is quantized once on the calling thread, then
// the column blocks are split over the current thread pool; epilogue(n0, n1) runs on the chunk's thread
// after columns [n0, n1) of all M rows are written (bias, activation). The chunks' ranges cover [0, N)
// once. Never allocates.
template <typename Epilogue>
void int8_dynamic_gemm(int64_t M, int64_t K, const float* x, int64_t ldx, const Int8DynamicWeights& w, float* y,
                       int64_t ldy, void* scratch, Epilogue&& epilogue) {
  const int64_t N = w.N();
  if (M <= 0 || N <= 0) return;
  const detail::Int8DynamicIsa isa = detail::int8_dynamic_active_isa();
  const Int8DynamicRows xq = detail::int8_dynamic_quantize(isa, M, K, x, ldx, scratch);
  parallel_for(w.blocks(), detail::int8_dynamic_grain(K), [&](int64_t b0, int64_t b1) {
    detail::int8_dynamic_blocks(isa, M, xq, w, y, ldy, b0, b1);
    epilogue(b0 * kInt8DynamicBlock, std::min(N, b1 * kInt8DynamicBlock));
  });
}

}  // namespace sdx::cpu
