// Exact integer products of 8-bit operands (see integer_gemm.h): the shifted packing of B, A's rows, and
// the column zero points' correction after int8_dynamic_gemm's integer blocks.
#include "backend/cpu/quant/integer_gemm.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sdx::cpu {
namespace {

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int64_t row_stride(int64_t K) { return round_up(round_up(std::max<int64_t>(K, 1), 4), 64); }

// B as int8 [K, N]: int8 as is, uint8 - 128.
std::vector<int8_t> signed_bytes(DType type, const void* b, int64_t ldb, int64_t K, int64_t N) {
  std::vector<int8_t> out(static_cast<size_t>(K * N));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(k * ldb + n);
      out[static_cast<size_t>(k * N + n)] = type == DType::kInt8
                                                ? static_cast<const int8_t*>(b)[i]
                                                : static_cast<int8_t>(int32_t{static_cast<const uint8_t*>(b)[i]} - 128);
    }
  return out;
}

Int8DynamicWeights pack(DType type, const void* b, int64_t ldb, int64_t K, int64_t N) {
  const std::vector<int8_t> s8 = signed_bytes(type, b, ldb, K, N);
  const std::vector<float> ones(static_cast<size_t>(std::max<int64_t>(N, 1)), 1.0f);  // scales: unread by integer blocks
  return Int8DynamicWeights(s8.data(), N, K, N, ones.data());
}

}  // namespace

IntegerGemmWeights::IntegerGemmWeights(DType b_type, const void* b, int64_t ldb, int64_t K, int64_t N,
                                       const int32_t* b_zero)
    : packed_(pack(b_type, b, ldb, K, N)) {
  const int32_t shift = b_type == DType::kUint8 ? 128 : 0;
  zero8_.resize(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    zero8_[static_cast<size_t>(n)] = (b_zero ? b_zero[n] : 0) - shift;
    has_zero8_ = has_zero8_ || zero8_[static_cast<size_t>(n)] != 0;
  }
}

size_t integer_gemm_scratch_bytes(int64_t M, int64_t K) {
  M = std::max<int64_t>(M, 1);
  return static_cast<size_t>(63 + M * row_stride(K) + M * (2 * sizeof(int32_t) + sizeof(float)));
}

IntegerGemmRows integer_gemm_rows(void* scratch, int64_t M, int64_t K) {
  M = std::max<int64_t>(M, 1);
  IntegerGemmRows r;
  r.ldq = row_stride(K);
  r.K = K;
  r.q = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(scratch), 64));
  r.zero = reinterpret_cast<int32_t*>(r.q + M * r.ldq);
  r.rowsum = r.zero + M;
  r.scale = reinterpret_cast<float*>(r.rowsum + M);
  return r;
}

void integer_gemm_finish_row(const IntegerGemmRows& rows, int64_t m, int32_t zero) {
  const uint8_t* q = rows.row(m);
  int64_t k = 0;
  int32_t sum = 0;
#if defined(__SSE2__)
  // psadbw against zero: the sums of 8 bytes in each 64-bit half (x86-64's baseline).
  __m128i acc = _mm_setzero_si128();
  for (; k + 16 <= rows.K; k += 16)
    acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k)), _mm_setzero_si128()));
  sum = static_cast<int32_t>(_mm_cvtsi128_si64(acc) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc)));
#endif
  for (; k < rows.K; ++k) sum += q[k];
  integer_gemm_set_row(rows, m, zero, sum);
}

void integer_gemm_load_row(const IntegerGemmRows& rows, int64_t m, DType a_type, const void* a, int32_t a_zp) {
  uint8_t* q = rows.row(m);
  if (a_type == DType::kUint8) {
    std::memcpy(q, a, static_cast<size_t>(rows.K));
    return integer_gemm_finish_row(rows, m, a_zp);
  }
  const auto* s = static_cast<const int8_t*>(a);
  for (int64_t k = 0; k < rows.K; ++k) q[k] = static_cast<uint8_t>(int32_t{s[k]} + 128);
  integer_gemm_finish_row(rows, m, a_zp + 128);
}

void integer_gemm(const IntegerGemmRows& rows, int64_t m0, int64_t m1, const IntegerGemmWeights& b, int32_t* c,
                  int64_t ldc, int64_t b0, int64_t b1) {
  if (m1 <= m0 || b1 <= b0) return;
  const Int8DynamicRows view{rows.row(m0), rows.ldq, rows.scale + m0, rows.zero + m0};
  detail::int8_integer_blocks(detail::int_gemm_active_isa(), m1 - m0, view, b.packed(), c, ldc, b0, b1);
  if (!b.has_zero8()) return;
  const int64_t n0 = b0 * kInt8DynamicBlock, n1 = std::min(b.N(), b1 * kInt8DynamicBlock), K = rows.K;
  for (int64_t m = m0; m < m1; ++m) {
    // Modular int32, like the kernels' sums (the true value fits while integer_gemm_applies(K)).
    const uint32_t centered = static_cast<uint32_t>(rows.rowsum[m]) - static_cast<uint32_t>(K) * static_cast<uint32_t>(rows.zero[m]);
    int32_t* cr = c + (m - m0) * ldc;
    for (int64_t n = n0; n < n1; ++n)
      cr[n] = static_cast<int32_t>(static_cast<uint32_t>(cr[n]) - static_cast<uint32_t>(b.zero8()[n]) * centered);
  }
}

}  // namespace sdx::cpu
