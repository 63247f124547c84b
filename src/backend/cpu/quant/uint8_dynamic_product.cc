// onnxruntime's dynamically quantized product (see uint8_dynamic_product.h): the parameters, the
// quantization of A, and the two paths.
#include "backend/cpu/quant/uint8_dynamic_product.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/quant/quantize_rows.h"
#include "backend/cpu/simd/vector_ops.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Bytes per quantized row: K padded to int8_dynamic_gemm's 4-byte groups, then to a cache line.
int64_t row_stride(int64_t K) { return round_up(round_up(std::max<int64_t>(K, 1), 4), 64); }

// Where run() keeps things in the scratch: M rows of bytes (64-byte aligned), then M scales and M zero
// points (the rows' view int8_dynamic_gemm reads), then N int64 sums for the exact loop.
struct Scratch {
  uint8_t* q;
  float* scale;
  int32_t* zero;
  int64_t* sums;
};

Scratch carve(void* scratch, int64_t M, int64_t K) {
  auto* q = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(scratch), 64));
  auto* scale = reinterpret_cast<float*>(q + M * row_stride(K));
  auto* zero = reinterpret_cast<int32_t*>(scale + M);
  auto* sums = reinterpret_cast<int64_t*>(round_up(reinterpret_cast<uintptr_t>(zero + M), 8));
  return {q, scale, zero, sums};
}

}  // namespace

namespace {

// Widens [*lo, *hi] to hold a's n values (the vector reductions, which return a NaN the row holds);
// false when one is NaN or Inf.
bool extend_range(const float* a, int64_t n, float* lo, float* hi) {
  if (n <= 0) return true;
  const float l = simd::row_min(a, n), h = simd::row_max(a, n);
  if (!std::isfinite(l) || !std::isfinite(h)) return false;
  *lo = std::min(*lo, l), *hi = std::max(*hi, h);
  return true;
}

// The parameters of a range [lo, hi] holding 0; false when hi - lo overflows float.
bool params_of_range(float lo, float hi, float* scale, int32_t* zero_point) {
  const float s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  if (!std::isfinite(s) || s == 0.f) return false;
  *scale = s;
  *zero_point = static_cast<int32_t>(std::nearbyint(std::clamp(0.0f - lo / s, 0.0f, 255.0f)));
  return true;
}

}  // namespace

bool uint8_dynamic_params(const float* a, int64_t n, float* scale, int32_t* zero_point) {
  float lo = 0.f, hi = 0.f;  // the range always holds 0
  return extend_range(a, n, &lo, &hi) && params_of_range(lo, hi, scale, zero_point);
}

Uint8DynamicProduct Uint8DynamicProduct::make(DType w_type, const void* w, int64_t K, int64_t N, const float* scale,
                                              const void* zero_point) {
  Uint8DynamicProduct p;
  p.K_ = K;
  p.N_ = N;
  bool zero_free = w_type == DType::kInt8;
  for (int64_t n = 0; zero_free && n < N; ++n) zero_free = static_cast<const int8_t*>(zero_point)[n] == 0;
  if (zero_free && int8_dynamic_applies(K)) {
    p.packed_ = true;
    p.blocks_ = Int8DynamicWeights(static_cast<const int8_t*>(w), N, K, N, scale);
    return p;
  }
  p.w_int_.resize(static_cast<size_t>(K * N));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(k * N + n);
      p.w_int_[i] = w_type == DType::kInt8
                        ? int32_t{static_cast<const int8_t*>(w)[i]} - static_cast<const int8_t*>(zero_point)[n]
                        : int32_t{static_cast<const uint8_t*>(w)[i]} - static_cast<const uint8_t*>(zero_point)[n];
    }
  p.scale_.assign(scale, scale + N);
  return p;
}

size_t Uint8DynamicProduct::scratch_bytes(int64_t M) const {
  M = std::max<int64_t>(M, 1);
  return static_cast<size_t>(63 + M * row_stride(K_) + M * 8 + 8 + N_ * 8);
}

void Uint8DynamicProduct::run(int64_t M, const float* a, int64_t lda, float* y, void* scratch, bool descending) const {
  if (M <= 0 || N_ <= 0) return;
  const int64_t K = K_, N = N_, ldq = row_stride(K);
  const Scratch s = carve(scratch, M, K);
  // One range over every value of A (rows may be strided).
  float lo = 0.f, hi = 0.f, as = 1.f;
  int32_t zp = 0;
  bool finite = true;
  for (int64_t m = 0; m < M && finite; ++m) finite = extend_range(a + m * lda, K, &lo, &hi);
  if (!finite || !params_of_range(lo, hi, &as, &zp)) {
    std::fill(y, y + M * N, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  for (int64_t m = 0; m < M; ++m) {
    uint8_t* qr = s.q + m * ldq;
    // A is finite here, so quantize_row's saturate(rint(a / s) + zp) is
    // nearbyint(clamp(a / s, -zp, 255 - zp)) + zp, MLAS's order.
    quantize_row(a + m * lda, as, zp, qr, K);
    std::memset(qr + K, 0, static_cast<size_t>(ldq - K));
    s.scale[m] = as;
    s.zero[m] = zp;
  }
  if (packed_) {
    const Int8DynamicRows rows{s.q, ldq, s.scale, s.zero};
    const detail::IntGemmIsa isa = detail::int_gemm_active_isa();
    parallel_for(blocks_.blocks(), detail::int8_dynamic_grain(K), [&](int64_t b0, int64_t b1) {
      if (!descending) return detail::int8_dynamic_blocks(isa, M, rows, blocks_, y, N, b0, b1);
      for (int64_t b = b1 - 1; b >= b0; --b) detail::int8_dynamic_blocks(isa, M, rows, blocks_, y, N, b, b + 1);
    });
    return;
  }
  for (int64_t m = 0; m < M; ++m) {
    const uint8_t* qr = s.q + m * ldq;
    std::fill(s.sums, s.sums + N, int64_t{0});
    for (int64_t k = 0; k < K; ++k) {
      const int64_t av = int64_t{qr[k]} - zp;
      const int32_t* wr = w_int_.data() + k * N;
      for (int64_t n = 0; n < N; ++n) s.sums[n] += av * wr[n];
    }
    for (int64_t n = 0; n < N; ++n)
      y[m * N + n] = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(s.sums[n]))) * (as * scale_[n]);
  }
}

}  // namespace sdx::cpu
