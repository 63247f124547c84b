// int8-weight small-M GEMM with X rounded to int16 (see int8_w16_gemm.h): the packing of W, the portable
// quantization and kernel, and the run-time choice of the vector ones (int8_w16_gemm_avx2.cc,
// int8_w16_gemm_avx512.cc). The portable code spells out the arithmetic contract; the vector code must
// reproduce it bit for bit (tests/backend/cpu/quant/int8_w16_gemm_test.cc).
#include "backend/cpu/quant/int8_w16_gemm.h"

#include <climits>
#include <cmath>
#include <cstring>

namespace sdx::cpu {
namespace detail {

// The vector kernels sum kInt8W16ChunkK values of k per int32 lane (vpdpwssd / vpmaddwd add 2 products per
// lane and step), each product at most 32767 * 128 in magnitude (|q| <= 32767 after the clamp, int8 w >=
// -128): the chunk's sum never wraps.
static_assert(kInt8W16ChunkK % 2 == 0, "chunks hold whole k pairs");
static_assert(kInt8W16ChunkK * int64_t{32767} * 128 <= INT32_MAX, "a chunk's int32 sum could overflow");
// The totals (integers) stay exact in double.
static_assert(kInt8W16MaxK * int64_t{32767} * 128 < (int64_t{1} << 53), "totals must be exact in double");

// Defined in int8_w16_gemm_avx2.cc / int8_w16_gemm_avx512.cc (compiled for their extensions by function
// attributes; only called when the CPU has them).
void int8_w16_quantize_avx2(int64_t K, const float* x, float s, int16_t* q);
void int8_w16_blocks_avx2(int64_t M, const Int8W16Rows& x, const Int8W16Weights& w, float* y, int64_t ldy, int64_t b0,
                          int64_t b1);
void int8_w16_blocks_vnni(int64_t M, const Int8W16Rows& x, const Int8W16Weights& w, float* y, int64_t ldy, int64_t b0,
                          int64_t b1);

namespace {

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// int16 values per quantized row in the scratch: K padded to the k pairs, then to a cache line.
int64_t quantized_row_stride(int64_t K) { return round_up(round_up(std::max<int64_t>(K, 1), 2), 32); }

void quantize_row_portable(int64_t K, const float* x, float s, int16_t* q) {
  for (int64_t k = 0; k < K; ++k) {
    float t = x[k] / s;
    t = t < -32767.f ? -32767.f : (t > 32767.f ? 32767.f : t);
    q[k] = static_cast<int16_t>(std::nearbyint(t));
  }
}

void blocks_portable(int64_t M, const Int8W16Rows& x, const Int8W16Weights& w, float* y, int64_t ldy, int64_t b0,
                     int64_t b1) {
  const int64_t pairs = w.padded_k() / 2, N = w.N();
  for (int64_t b = b0; b < b1; ++b) {
    const int8_t* wb = w.block(b);
    const int64_t n0 = b * kInt8W16Block, width = std::min(kInt8W16Block, N - n0);
    for (int64_t m = 0; m < M; ++m) {
      const int16_t* xr = x.q + m * x.ldq;
      for (int64_t c = 0; c < width; ++c) {
        int64_t acc = 0;  // exact (int8_w16_applies)
        for (int64_t p = 0; p < pairs; ++p) {
          const int8_t* wp = wb + (p * kInt8W16Block + c) * 2;
          acc += int64_t{xr[2 * p]} * wp[0] + int64_t{xr[2 * p + 1]} * wp[1];
        }
        const float s = x.scale[m] * w.scale()[n0 + c];
        y[m * ldy + n0 + c] = static_cast<float>(acc) * s;  // int64 -> float: one rounding, nearest even
      }
    }
  }
}

}  // namespace

Int8W16Rows int8_w16_quantize(IntGemmIsa isa, int64_t M, int64_t K, const float* x, int64_t ldx, void* scratch) {
  const int64_t ldq = quantized_row_stride(K);
  auto* q = reinterpret_cast<int16_t*>(round_up(reinterpret_cast<uintptr_t>(scratch), 64));
  auto* scale = reinterpret_cast<float*>(q + M * ldq);
#if defined(__x86_64__) || defined(__i386__)
  const bool vector = isa != IntGemmIsa::kPortable && int_gemm_isa_supported(IntGemmIsa::kAvx2);
#else
  const bool vector = false;
#endif
  const IntGemmIsa amax_isa = vector ? IntGemmIsa::kAvx2 : IntGemmIsa::kPortable;
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * ldx;
    int16_t* qr = q + m * ldq;
    std::memset(qr + K, 0, static_cast<size_t>(ldq - K) * sizeof(int16_t));
    scale[m] = row_scale(row_amax_bits(amax_isa, xr, K), 32767.f);
    if (std::isnan(scale[m])) {  // Inf or NaN in the row: q = 0, and NaN * 0 makes the output row NaN
      std::memset(qr, 0, static_cast<size_t>(K) * sizeof(int16_t));
      continue;
    }
#if defined(__x86_64__) || defined(__i386__)
    if (vector) {
      int8_w16_quantize_avx2(K, xr, scale[m], qr);
      continue;
    }
#endif
    quantize_row_portable(K, xr, scale[m], qr);
  }
  return {q, ldq, scale};
}

void int8_w16_blocks(IntGemmIsa isa, int64_t M, const Int8W16Rows& x, const Int8W16Weights& w, float* y, int64_t ldy,
                     int64_t b0, int64_t b1) {
  if (M <= 0 || b1 <= b0) return;
#if defined(__x86_64__) || defined(__i386__)
  if (isa == IntGemmIsa::kAvx512Vnni && int_gemm_isa_supported(isa))
    return int8_w16_blocks_vnni(M, x, w, y, ldy, b0, b1);
  if (isa != IntGemmIsa::kPortable && int_gemm_isa_supported(IntGemmIsa::kAvx2))
    return int8_w16_blocks_avx2(M, x, w, y, ldy, b0, b1);
#endif
  blocks_portable(M, x, w, y, ldy, b0, b1);
}

}  // namespace detail

Int8W16Weights::Int8W16Weights(const int8_t* w, int64_t ldw, int64_t K, int64_t N, const float* scale)
    : K_(K), N_(N), Kp_(detail::round_up(std::max<int64_t>(K, 1), 2)) {
  const int64_t width = blocks() * kInt8W16Block;
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(1, Kp_ * width));
  storage_ = std::make_unique<int8_t[]>(bytes + 63);  // value-initialized: padding is 0
  packed_ = reinterpret_cast<int8_t*>(detail::round_up(reinterpret_cast<uintptr_t>(storage_.get()), 64));
  scale_.assign(static_cast<size_t>(width), 0.f);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t b = n / kInt8W16Block, c = n % kInt8W16Block;
    int8_t* dst = packed_ + b * Kp_ * kInt8W16Block;
    for (int64_t k = 0; k < K; ++k) dst[((k / 2) * kInt8W16Block + c) * 2 + k % 2] = w[k * ldw + n];
    scale_[static_cast<size_t>(n)] = scale[n];
  }
}

size_t int8_w16_scratch_bytes(int64_t M, int64_t K) {
  M = std::max<int64_t>(M, 1);
  return static_cast<size_t>(63 + M * detail::quantized_row_stride(K) * static_cast<int64_t>(sizeof(int16_t)) +
                             M * static_cast<int64_t>(sizeof(float)));
}

}  // namespace sdx::cpu
