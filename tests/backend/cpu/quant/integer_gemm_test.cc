// Exact integer products (backend/cpu/quant/integer_gemm.h): every SIMD level against an int64 reference,
// for uint8 and int8 on both sides, per-column and per-tensor zero points (including the extremes 0 and
// 255 / -128 and 127), odd sizes, a row range starting past 0 and a subset of the column blocks.
#include "backend/cpu/quant/integer_gemm.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/simd/isa.h"

namespace sdx::cpu {
namespace {

struct Operand {
  DType type;
  std::vector<uint8_t> raw;   // the bytes
  std::vector<int32_t> vals;  // their values
};

Operand random_operand(DType type, int64_t n, std::mt19937& gen) {
  std::uniform_int_distribution<int> d(type == DType::kInt8 ? -128 : 0, type == DType::kInt8 ? 127 : 255);
  Operand o{type, {}, {}};
  for (int64_t i = 0; i < n; ++i) {
    const int v = d(gen);
    o.raw.push_back(static_cast<uint8_t>(v));
    o.vals.push_back(v);
  }
  return o;
}

TEST(IntegerGemm, EveryLevelMatchesExactSums) {
  std::mt19937 gen(3);
  const std::vector<simd::Isa> levels = {simd::Isa::kScalar, simd::Isa::kAvx2, simd::Isa::kAvx512};
  for (DType at : {DType::kUint8, DType::kInt8})
    for (DType bt : {DType::kUint8, DType::kInt8})
      for (int64_t K : {1, 5, 64, 131})
        for (int64_t N : {1, 63, 130}) {
          const int64_t M = 7;
          const Operand a = random_operand(at, M * K, gen), b = random_operand(bt, K * N, gen);
          const int lo = at == DType::kInt8 ? -128 : 0, hi = at == DType::kInt8 ? 127 : 255;
          std::vector<int32_t> azp(static_cast<size_t>(M)), bzp(static_cast<size_t>(N));
          for (int64_t m = 0; m < M; ++m) azp[static_cast<size_t>(m)] = m == 0 ? lo : m == 1 ? hi : lo + static_cast<int>(gen() % 256);
          const bool per_column = N % 2 == 0;
          const int blo = bt == DType::kInt8 ? -128 : 0;
          for (int64_t n = 0; n < N; ++n) bzp[static_cast<size_t>(n)] = per_column ? blo + static_cast<int>(gen() % 256) : blo + 77;
          std::vector<int32_t> want(static_cast<size_t>(M * N));
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              int64_t s = 0;
              for (int64_t k = 0; k < K; ++k)
                s += int64_t{a.vals[static_cast<size_t>(m * K + k)] - azp[static_cast<size_t>(m)]} *
                     (b.vals[static_cast<size_t>(k * N + n)] - bzp[static_cast<size_t>(n)]);
              want[static_cast<size_t>(m * N + n)] = static_cast<int32_t>(s);
            }
          const IntegerGemmWeights w(bt, b.raw.data(), N, K, N, bzp.data());
          std::vector<char> scratch(integer_gemm_scratch_bytes(M, K));
          const IntegerGemmRows rows = integer_gemm_rows(scratch.data(), M, K);
          for (int64_t m = 0; m < M; ++m) integer_gemm_load_row(rows, m, at, a.raw.data() + m * K, azp[static_cast<size_t>(m)]);
          for (simd::Isa isa : levels) {
            if (static_cast<int>(isa) > static_cast<int>(simd::detected_isa())) continue;
            simd::ScopedIsa level(isa);
            const std::string what = std::string(dtype_name(at)) + " x " + dtype_name(bt) + " " + simd::isa_name(isa) +
                                     " K=" + std::to_string(K) + " N=" + std::to_string(N);
            std::vector<int32_t> c(static_cast<size_t>(M * N), -1);
            integer_gemm(rows, 0, M, w, c.data(), N, 0, w.blocks());
            ASSERT_EQ(c, want) << what;
            // Rows [2, M) and the last column block only, written at row 2's place.
            std::vector<int32_t> part(static_cast<size_t>(M * N), -1);
            const int64_t last = w.blocks() - 1;
            integer_gemm(rows, 2, M, w, part.data() + 2 * N, N, last, last + 1);
            for (int64_t m = 0; m < M; ++m)
              for (int64_t n = 0; n < N; ++n) {
                const bool written = m >= 2 && n >= last * kInt8DynamicBlock;
                ASSERT_EQ(part[static_cast<size_t>(m * N + n)], written ? want[static_cast<size_t>(m * N + n)] : -1)
                    << what << " part m=" << m << " n=" << n;
              }
          }
        }
}

}  // namespace
}  // namespace sdx::cpu
