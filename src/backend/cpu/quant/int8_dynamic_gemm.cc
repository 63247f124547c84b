// Dynamically quantized int8 small-M GEMM (see int8_dynamic_gemm.h): the packing of W, the portable
// quantization and kernel, and the run-time choice of the vector ones (int8_dynamic_gemm_avx2.cc,
// int8_dynamic_gemm_avx512.cc). The portable code spells out the arithmetic contract; the vector code
// must reproduce it bit for bit (tests/backend/cpu/quant/int8_dynamic_gemm_test.cc).
#include "backend/cpu/quant/int8_dynamic_gemm.h"

#include <cmath>
#include <cstring>

namespace sdx::cpu {
namespace detail {

// Defined in int8_dynamic_gemm_avx2.cc / int8_dynamic_gemm_avx512.cc (compiled for their extensions by
// function attributes; only called when the CPU has them).
void int8_dynamic_quantize_avx2(int64_t M, int64_t K, const float* x, int64_t ldx, uint8_t* q, int64_t ldq,
                                float* scale);
void int8_dynamic_blocks_avx2(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, float* y,
                              int64_t ldy, int64_t b0, int64_t b1);
void int8_dynamic_blocks_vnni(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, float* y,
                              int64_t ldy, int64_t b0, int64_t b1);
void int8_integer_blocks_avx2(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, int32_t* y,
                              int64_t ldy, int64_t b0, int64_t b1);
void int8_integer_blocks_vnni(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, int32_t* y,
                              int64_t ldy, int64_t b0, int64_t b1);

namespace {

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Bytes per quantized row in the scratch: K padded to the 4-byte groups, then to a cache line.
int64_t quantized_row_stride(int64_t K) { return round_up(round_up(std::max<int64_t>(K, 1), 4), 64); }

}  // namespace

bool int8_dynamic_row_scale(uint32_t amax_bits, uint8_t* qr, int64_t K, int64_t ldq, float* row_scale, float* s) {
  std::memset(qr + K, 128, static_cast<size_t>(ldq - K));
  *row_scale = detail::row_scale(amax_bits, 127.f);
  if (std::isnan(*row_scale)) {  // Inf or NaN in the row
    std::memset(qr, 128, static_cast<size_t>(K));
    return false;
  }
  *s = *row_scale;
  return true;
}

namespace {

void quantize_portable(int64_t M, int64_t K, const float* x, int64_t ldx, uint8_t* q, int64_t ldq, float* scale) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * ldx;
    uint8_t* qr = q + m * ldq;
    float s;
    if (!int8_dynamic_row_scale(row_amax_bits(IntGemmIsa::kPortable, xr, K), qr, K, ldq, &scale[m], &s)) continue;
    for (int64_t k = 0; k < K; ++k) {
      float t = xr[k] / s;
      t = t < -127.f ? -127.f : (t > 127.f ? 127.f : t);
      qr[k] = static_cast<uint8_t>(static_cast<int>(std::nearbyint(t)) + 128);
    }
  }
}

// kInt: y is int32 and receives the corrected sums; else float, scaled.
template <bool kInt>
void blocks_portable(int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w, void* y, int64_t ldy,
                     int64_t b0, int64_t b1) {
  const int64_t groups = w.padded_k() / 4, N = w.N();
  for (int64_t b = b0; b < b1; ++b) {
    const int8_t* wb = w.block(b);
    const int64_t n0 = b * kInt8DynamicBlock, width = std::min(kInt8DynamicBlock, N - n0);
    for (int64_t m = 0; m < M; ++m) {
      const uint8_t* xr = x.q + m * x.ldq;
      for (int64_t c = 0; c < width; ++c) {
        // int64 then a modular narrowing: the same bits as the vector kernels' wrapping int32 sums, and
        // the exact value while int8_dynamic_applies(K).
        int64_t acc = 0;
        for (int64_t g = 0; g < groups; ++g) {
          const int8_t* wg = wb + (g * kInt8DynamicBlock + c) * 4;
          for (int j = 0; j < 4; ++j) acc += int64_t{xr[4 * g + j]} * wg[j];
        }
        const int64_t corr = x.zero ? int64_t{x.zero[m]} * w.colsum()[n0 + c] : w.corr()[n0 + c];
        const int32_t exact = static_cast<int32_t>(static_cast<uint32_t>(acc - corr));
        if constexpr (kInt) {
          static_cast<int32_t*>(y)[m * ldy + n0 + c] = exact;
        } else {
          const float s = x.scale[m] * w.scale()[n0 + c];
          static_cast<float*>(y)[m * ldy + n0 + c] = static_cast<float>(exact) * s;
        }
      }
    }
  }
}

}  // namespace

Int8DynamicRows int8_dynamic_quantize(Int8DynamicIsa isa, int64_t M, int64_t K, const float* x, int64_t ldx,
                                      void* scratch) {
  const int64_t ldq = quantized_row_stride(K);
  auto* q = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(scratch), 64));
  auto* scale = reinterpret_cast<float*>(q + M * ldq);
#if defined(__x86_64__) || defined(__i386__)
  if (isa != Int8DynamicIsa::kPortable && int8_dynamic_isa_supported(Int8DynamicIsa::kAvx2)) {
    int8_dynamic_quantize_avx2(M, K, x, ldx, q, ldq, scale);
    return {q, ldq, scale};
  }
#endif
  quantize_portable(M, K, x, ldx, q, ldq, scale);
  return {q, ldq, scale};
}

void int8_dynamic_blocks(Int8DynamicIsa isa, int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w,
                         float* y, int64_t ldy, int64_t b0, int64_t b1) {
  if (M <= 0 || b1 <= b0) return;
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Int8DynamicIsa::kAvx512Vnni && int8_dynamic_isa_supported(isa))
    return int8_dynamic_blocks_vnni(M, x, w, y, ldy, b0, b1);
  if (isa != Int8DynamicIsa::kPortable && int8_dynamic_isa_supported(Int8DynamicIsa::kAvx2))
    return int8_dynamic_blocks_avx2(M, x, w, y, ldy, b0, b1);
#endif
  blocks_portable<false>(M, x, w, y, ldy, b0, b1);
}

void int8_integer_blocks(Int8DynamicIsa isa, int64_t M, const Int8DynamicRows& x, const Int8DynamicWeights& w,
                         int32_t* y, int64_t ldy, int64_t b0, int64_t b1) {
  if (M <= 0 || b1 <= b0) return;
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Int8DynamicIsa::kAvx512Vnni && int8_dynamic_isa_supported(isa))
    return int8_integer_blocks_vnni(M, x, w, y, ldy, b0, b1);
  if (isa != Int8DynamicIsa::kPortable && int8_dynamic_isa_supported(Int8DynamicIsa::kAvx2))
    return int8_integer_blocks_avx2(M, x, w, y, ldy, b0, b1);
#endif
  blocks_portable<true>(M, x, w, y, ldy, b0, b1);
}

}  // namespace detail

Int8DynamicWeights::Int8DynamicWeights(const int8_t* w, int64_t ldw, int64_t K, int64_t N, const float* scale)
    : K_(K), N_(N), Kp_(detail::round_up(std::max<int64_t>(K, 1), 4)) {
  const int64_t width = blocks() * kInt8DynamicBlock;
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(1, Kp_ * width));
  storage_ = std::make_unique<int8_t[]>(bytes + 63);  // value-initialized: padding is 0
  packed_ = reinterpret_cast<int8_t*>(detail::round_up(reinterpret_cast<uintptr_t>(storage_.get()), 64));
  corr_.assign(static_cast<size_t>(width), 0);
  colsum_.assign(static_cast<size_t>(width), 0);
  scale_.assign(static_cast<size_t>(width), 0.f);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t b = n / kInt8DynamicBlock, c = n % kInt8DynamicBlock;
    int8_t* dst = packed_ + b * Kp_ * kInt8DynamicBlock;
    int64_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int8_t v = w[k * ldw + n];
      dst[((k / 4) * kInt8DynamicBlock + c) * 4 + k % 4] = v;
      sum += v;
    }
    // Modular like the kernels' int32 sums (exact while int8_dynamic_applies(K)).
    corr_[static_cast<size_t>(n)] = static_cast<int32_t>(static_cast<uint32_t>(128 * sum));
    colsum_[static_cast<size_t>(n)] = static_cast<int32_t>(static_cast<uint32_t>(sum));
    scale_[static_cast<size_t>(n)] = scale[n];
  }
}

size_t int8_dynamic_scratch_bytes(int64_t M, int64_t K) {
  M = std::max<int64_t>(M, 1);
  return static_cast<size_t>(63 + M * detail::quantized_row_stride(K) + M * static_cast<int64_t>(sizeof(float)));
}

bool int8_dynamic_vnni() { return detail::int8_dynamic_isa_supported(detail::Int8DynamicIsa::kAvx512Vnni); }

}  // namespace sdx::cpu
