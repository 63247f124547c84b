// Exact integer products of 8-bit operands with zero points, the sums of ConvInteger, QLinearConv and
// MatMulInteger:
//   C[m, n] (int32) = sum_k (a[m, k] - a_zp[m]) (b[k, n] - b_zp[n])
// on int8_dynamic_gemm's packed blocks (AVX-512 VNNI vpdpbusd u8 x s8, AVX2, portable: the same values).
//
//   IntegerGemmWeights b(DType::kUint8, b_bytes, /*ldb=*/N, K, N, b_zero);   // B [K, N], packed once
//   std::vector<char> scratch(integer_gemm_scratch_bytes(M, K));
//   IntegerGemmRows rows = integer_gemm_rows(scratch.data(), M, K);
//   for (m...) integer_gemm_load_row(rows, m, DType::kUint8, a + m * K, a_zp);  // or write row(m), then finish_row
//   integer_gemm(rows, 0, M, b, c, /*ldc=*/N, 0, b.blocks());
//
// vpdpbusd multiplies unsigned by signed bytes, so an int8 A is stored shifted by +128 and a uint8 B by
// -128, each with its zero point shifted alike (the differences, so the sums, are unchanged). With
// b8 = b - shift and bz8 = b_zp - shift, row m's sums are
//   sum_k a b8 - a_zp[m] colsum(b8)[n] - bz8[n] (rowsum(a)[m] - K a_zp[m]):
// the kernels compute the first two terms; integer_gemm subtracts the third where some bz8 is not 0.
// Exact in int32 while K <= kInt8DynamicMaxK (integer_gemm_applies).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/quant/int8_dynamic_gemm.h"
#include "core/dtype.h"

namespace sdx::cpu {

// Whether the sums are exact in int32 for this K.
inline bool integer_gemm_applies(int64_t K) { return int8_dynamic_applies(K); }

class IntegerGemmWeights {
 public:
  // b: [K, N] int8 or uint8 with row stride ldb; b_zero: N zero points (or null: 0). Copies what it needs.
  IntegerGemmWeights(DType b_type, const void* b, int64_t ldb, int64_t K, int64_t N, const int32_t* b_zero);

  int64_t K() const { return packed_.K(); }
  int64_t N() const { return packed_.N(); }
  int64_t blocks() const { return packed_.blocks(); }
  const Int8DynamicWeights& packed() const { return packed_; }
  // bz8[n] = b_zp[n] - shift, and whether any is non-zero.
  const int32_t* zero8() const { return zero8_.data(); }
  bool has_zero8() const { return has_zero8_; }

 private:
  Int8DynamicWeights packed_;
  std::vector<int32_t> zero8_;
  bool has_zero8_ = false;
};

// A's rows as the kernels read them, in caller-provided scratch: row m's K bytes at row(m) (stride ldq, a
// multiple of 64, 64-byte aligned), its zero point zero[m] and byte sum rowsum[m] (both shifted for int8).
struct IntegerGemmRows {
  uint8_t* q = nullptr;
  int64_t ldq = 0, K = 0;
  int32_t* zero = nullptr;
  int32_t* rowsum = nullptr;
  float* scale = nullptr;  // unread; the rows' view int8_dynamic_gemm expects

  uint8_t* row(int64_t m) const { return q + m * ldq; }
};

size_t integer_gemm_scratch_bytes(int64_t M, int64_t K);
IntegerGemmRows integer_gemm_rows(void* scratch, int64_t M, int64_t K);
// Row m from K values of a_type (int8 or uint8) and its zero point a_zp (in a_type's range).
void integer_gemm_load_row(const IntegerGemmRows& rows, int64_t m, DType a_type, const void* a, int32_t a_zp);
// After the caller wrote row m's K bytes itself (already shifted for int8): its zero point and sum.
void integer_gemm_finish_row(const IntegerGemmRows& rows, int64_t m, int32_t zero);
// The same when the caller summed the bytes as it wrote them.
inline void integer_gemm_set_row(const IntegerGemmRows& rows, int64_t m, int32_t zero, int32_t rowsum) {
  rows.zero[m] = zero;
  rows.rowsum[m] = rowsum;
  rows.scale[m] = 1.0f;
}

// c[m, n] (row stride ldc; c points at row m0's first column) for rows [m0, m1) and column blocks [b0, b1)
// of b. Single-threaded; requires integer_gemm_applies(K).
void integer_gemm(const IntegerGemmRows& rows, int64_t m0, int64_t m1, const IntegerGemmWeights& b, int32_t* c,
                  int64_t ldc, int64_t b0, int64_t b1);

}  // namespace sdx::cpu
