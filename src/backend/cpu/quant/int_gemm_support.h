// What the integer small-M GEMMs (int8_dynamic_gemm.h: W8A8; int8_w16_gemm.h: W8A16) share: which vector
// path runs, and the per-row absolute maximum and scale their dynamic quantization of X starts from.
//
//   const IntGemmIsa isa = detail::int_gemm_active_isa();               // once per call
//   const float s_x = detail::row_scale(detail::row_amax_bits(isa, x, K), 127.f);
//   if (std::isnan(s_x)) { /* the row holds Inf/NaN: its output row is NaN */ }
//
// Every path gives the same bits: the GEMMs' contracts are written so that the portable, AVX2 and
// AVX-512 VNNI code agree exactly, and the helpers here are exact (a maximum, one float division).
#pragma once

#include <cstdint>

namespace sdx::cpu::detail {

// The code paths of the integer GEMMs. kAvx512Vnni needs avx512f/bw/vl/vnni (and AVX2 for the
// quantization of X, which it shares with kAvx2).
enum class IntGemmIsa { kPortable, kAvx2, kAvx512Vnni };

const char* int_gemm_isa_name(IntGemmIsa isa);  // "portable", "avx2", "avx512vnni"

// Whether `isa` can run on this CPU.
bool int_gemm_isa_supported(IntGemmIsa isa);

// The path the integer GEMMs take now: the best supported one, lowered by simd::active_isa()
// (SDX_CPU_ISA=scalar|avx2, simd::ScopedIsa in tests).
IntGemmIsa int_gemm_active_isa();

// max over k < K of the bit pattern of x[k] with the sign cleared: for finite values the integer order
// is the float order of |x|, and a result >= 0x7f800000 (the bits of +Inf) means the row holds Inf or
// NaN. 0 for K <= 0. The AVX2 code (kAvx2, kAvx512Vnni) and the portable loop give the same value.
uint32_t row_amax_bits(IntGemmIsa isa, const float* x, int64_t K);

// A row's quantization scale s_x from its row_amax_bits: NaN when the row holds Inf or NaN; otherwise
// amax / qmax (float division), or 1 when that is 0 (a zero row, or one whose amax / qmax underflows: its
// q are all 0 then).
float row_scale(uint32_t amax_bits, float qmax);

}  // namespace sdx::cpu::detail
