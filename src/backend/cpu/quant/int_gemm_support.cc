// The shared pieces of the integer small-M GEMMs (see int_gemm_support.h). The AVX2 maximum is built for
// AVX2 by a function attribute (the project compiles with plain -O2) and only called after
// int_gemm_isa_supported() checked the CPU.
#include "backend/cpu/quant/int_gemm_support.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "backend/cpu/simd/isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace sdx::cpu::detail {
namespace {

uint32_t row_amax_bits_portable(const float* x, int64_t K) {
  uint32_t amax_bits = 0;
  for (int64_t k = 0; k < K; ++k) {
    uint32_t bits;
    std::memcpy(&bits, x + k, sizeof(bits));
    amax_bits = std::max(amax_bits, bits & 0x7fffffffu);
  }
  return amax_bits;
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"), always_inline)) inline __m256i abs_bits(const float* p) {
  return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), _mm256_set1_epi32(0x7fffffff));
}

__attribute__((target("avx2"))) uint32_t row_amax_bits_avx2(const float* x, int64_t K) {
  // Two chains hide the latency of the maximum; masked-off lanes of the tail read 0.
  __m256i mx = _mm256_setzero_si256(), mx2 = _mm256_setzero_si256();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    mx = _mm256_max_epu32(mx, abs_bits(x + k));
    mx2 = _mm256_max_epu32(mx2, abs_bits(x + k + 8));
  }
  mx = _mm256_max_epu32(mx, mx2);
  for (; k + 8 <= K; k += 8) mx = _mm256_max_epu32(mx, abs_bits(x + k));
  if (k < K) {
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(K - k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    mx = _mm256_max_epu32(mx, _mm256_and_si256(_mm256_maskload_epi32(reinterpret_cast<const int*>(x + k), mask),
                                               _mm256_set1_epi32(0x7fffffff)));
  }
  __m128i h = _mm_max_epu32(_mm256_castsi256_si128(mx), _mm256_extracti128_si256(mx, 1));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4e));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xb1));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(h));
}
#endif

}  // namespace

const char* int_gemm_isa_name(IntGemmIsa isa) {
  switch (isa) {
    case IntGemmIsa::kPortable: return "portable";
    case IntGemmIsa::kAvx2: return "avx2";
    case IntGemmIsa::kAvx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

bool int_gemm_isa_supported(IntGemmIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  static const bool kAvx2 = __builtin_cpu_supports("avx2");
  static const bool kVnni = kAvx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  switch (isa) {
    case IntGemmIsa::kPortable: return true;
    case IntGemmIsa::kAvx2: return kAvx2;
    case IntGemmIsa::kAvx512Vnni: return kVnni;
  }
  return false;
#else
  return isa == IntGemmIsa::kPortable;
#endif
}

IntGemmIsa int_gemm_active_isa() {
  switch (simd::active_isa()) {
    case simd::Isa::kScalar:
      return IntGemmIsa::kPortable;
    case simd::Isa::kAvx2:
      break;
    case simd::Isa::kAvx512:
      if (int_gemm_isa_supported(IntGemmIsa::kAvx512Vnni)) return IntGemmIsa::kAvx512Vnni;
      break;
  }
  return int_gemm_isa_supported(IntGemmIsa::kAvx2) ? IntGemmIsa::kAvx2 : IntGemmIsa::kPortable;
}

uint32_t row_amax_bits(IntGemmIsa isa, const float* x, int64_t K) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa != IntGemmIsa::kPortable && int_gemm_isa_supported(IntGemmIsa::kAvx2)) return row_amax_bits_avx2(x, K);
#endif
  return row_amax_bits_portable(x, K);
}

float row_scale(uint32_t amax_bits, float qmax) {
  if (amax_bits >= 0x7f800000u) return std::numeric_limits<float>::quiet_NaN();  // Inf or NaN
  float amax;
  std::memcpy(&amax, &amax_bits, sizeof(amax));
  const float s = amax / qmax;
  return s == 0.f ? 1.f : s;
}

}  // namespace sdx::cpu::detail
