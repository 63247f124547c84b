// Small-M GEMM (see small_m_gemm.h): the portable kernel and the run-time choice of the AVX-512
// (small_m_gemm_avx512.cc) or AVX2 (small_m_gemm_avx2.cc) one by simd::active_isa() (SDX_CPU_ISA lowers
// it). The portable kernel spells out the arithmetic contract with std::fma, so the vectorized kernels must
// reproduce it bit for bit (tests/backend/cpu/gemm/small_m_gemm_test.cc).
#include "backend/cpu/gemm/small_m_gemm.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <tuple>

#include "backend/cpu/simd/isa.h"
#include "core/float16.h"

namespace sdx::cpu {
namespace detail {

// Defined in small_m_gemm_avx2.cc (compiled for avx2,fma,f16c by function attributes; only called
// when the CPU has them).
void small_m_gemm_columns_avx2(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w,
                               float alpha, float beta, float* y, int64_t ldy, int64_t n0, int64_t n1);
// Defined in small_m_gemm_avx512.cc (avx512f, avx2, fma, f16c by function attributes; called when the
// active level is AVX-512). Every row up to 8 in one tile: W read once per call, not once per row pair.
void small_m_gemm_columns_avx512(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w,
                                 float alpha, float beta, float* y, int64_t ldy, int64_t n0, int64_t n1);

// Defined in small_m_gemm_avx512.cc: one row (M = 1) against two full blocks of packed W at once.
void small_m_gemm_row_pair_avx512(int64_t K, const float* x, const SmallMWeights& w0, const SmallMWeights& w1,
                                  float alpha, float beta, float* y0, float* y1);

namespace {
inline float weight_at(const SmallMWeights& w, int64_t k, int64_t n) {
  const int64_t i = k * w.ldw + n;
  switch (w.type) {
    case WeightType::kFloat32:
      return static_cast<const float*>(w.data)[i];
    case WeightType::kFloat16:
      return Float16::from_bits(static_cast<const uint16_t*>(w.data)[i]).to_float();
    case WeightType::kInt8:
      return static_cast<float>(static_cast<const int8_t*>(w.data)[i]);
  }
  return 0.f;
}
}  // namespace

void small_m_gemm_columns_portable(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w,
                                   float alpha, float beta, float* y, int64_t ldy, int64_t n0, int64_t n1) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * ldx;
    float* yr = y + m * ldy;
    for (int64_t n = n0; n < n1; ++n) {
      float acc = 0.f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(xr[k], weight_at(w, k, n), acc);
      if (w.scale) acc = acc * w.scale[n];
      if (alpha != 1.f) acc = alpha * acc;
      if (beta != 0.f) acc = std::fma(beta, yr[n], acc);
      yr[n] = acc;
    }
  }
}

}  // namespace detail

SmallMPackedWeights::SmallMPackedWeights(const SmallMWeights& w, int64_t K, int64_t N)
    : type_(w.type), K_(K), N_(N), scale_(w.scale) {
  elem_bytes_ = w.type == WeightType::kFloat32 ? 4 : w.type == WeightType::kFloat16 ? 2 : 1;
  bytes_ = std::make_unique<char[]>(static_cast<size_t>(std::max<int64_t>(1, K * N * elem_bytes_)));
  const char* src = static_cast<const char*>(w.data);
  for (int64_t n0 = 0; n0 < N; n0 += kSmallMBlock) {
    const int64_t width = std::min(kSmallMBlock, N - n0);
    char* dst = bytes_.get() + n0 * K * elem_bytes_;
    for (int64_t k = 0; k < K; ++k)
      std::memcpy(dst + k * width * elem_bytes_, src + (k * w.ldw + n0) * elem_bytes_,
                  static_cast<size_t>(width * elem_bytes_));
  }
}

std::shared_ptr<const SmallMPackedWeights> shared_small_m_packed(const SmallMWeights& w, int64_t K, int64_t N) {
  using Key = std::tuple<const void*, const float*, int, int64_t, int64_t, int64_t>;
  static std::mutex mu;  // guards cache; publishes each entry to sessions prepared on other threads
  static std::map<Key, std::weak_ptr<const SmallMPackedWeights>> cache;
  const Key key{w.data, w.scale, static_cast<int>(w.type), w.ldw, K, N};
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<const SmallMPackedWeights>& slot = cache[key];
  if (std::shared_ptr<const SmallMPackedWeights> p = slot.lock()) return p;
  auto p = std::make_shared<const SmallMPackedWeights>(w, K, N);
  slot = p;
  if (cache.size() > 256)
    for (auto it = cache.begin(); it != cache.end();) it = it->second.expired() ? cache.erase(it) : std::next(it);
  return p;
}

bool small_m_gemm_vectorized() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool kHas = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                           __builtin_cpu_supports("f16c");
  return kHas;
#else
  return false;
#endif
}

void small_m_gemm_columns(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMWeights& w, float alpha,
                          float beta, float* y, int64_t ldy, int64_t n0, int64_t n1) {
  if (M <= 0 || n1 <= n0) return;
#if defined(__x86_64__) || defined(__i386__)
  if (simd::active_isa() == simd::Isa::kAvx512 && small_m_gemm_vectorized()) {
    detail::small_m_gemm_columns_avx512(M, K, x, ldx, w, alpha, beta, y, ldy, n0, n1);
    return;
  }
  if (simd::active_isa() >= simd::Isa::kAvx2 && small_m_gemm_vectorized()) {
    detail::small_m_gemm_columns_avx2(M, K, x, ldx, w, alpha, beta, y, ldy, n0, n1);
    return;
  }
#endif
  detail::small_m_gemm_columns_portable(M, K, x, ldx, w, alpha, beta, y, ldy, n0, n1);
}

void small_m_gemm_blocks(int64_t M, int64_t K, const float* x, int64_t ldx, const SmallMPackedWeights& w, int64_t b0,
                         int64_t b1, float alpha, float beta, float* y, int64_t ldy, bool descending) {
  if (M <= 0) return;
  bool pairs = false;
#if defined(__x86_64__) || defined(__i386__)
  pairs = M == 1 && simd::active_isa() == simd::Isa::kAvx512 && small_m_gemm_vectorized();
#endif
  for (int64_t i = 0, count = b1 - b0; i < count;) {
    const int64_t b = descending ? b1 - 1 - i : b0 + i;
    const SmallMWeights wb = w.block(b);
    if (pairs && i + 1 < count) {
      const int64_t b2 = descending ? b - 1 : b + 1;
      const SmallMWeights wb2 = w.block(b2);
      if (wb.ldw == kSmallMBlock && wb2.ldw == kSmallMBlock) {
#if defined(__x86_64__) || defined(__i386__)
        detail::small_m_gemm_row_pair_avx512(K, x, wb, wb2, alpha, beta, y + b * kSmallMBlock, y + b2 * kSmallMBlock);
#endif
        i += 2;
        continue;
      }
    }
    small_m_gemm_columns(M, K, x, ldx, wb, alpha, beta, y + b * kSmallMBlock, ldy, 0, wb.ldw);
    ++i;
  }
}

}  // namespace sdx::cpu
