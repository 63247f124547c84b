// A product with onnxruntime's dynamic quantization of its left operand (what its DynamicQuantizeLSTM does
// for X W and for h R at every step, rnn_helpers.cc ComputeGemm):
//   y[M, N] = float(sum_k (a_q[m, k] - a_zp) (w[k, n] - w_zp[n])) * (a_scale * w_scale[n])
// with the weights W [K, N] int8 or uint8 (per-column or per-tensor scales and zero points), and A float32
// quantized on every call, per tensor over all its M x K values, to uint8:
//   lo = min(0, min a), hi = max(0, max a); a_scale = (hi - lo) / 255 (1 when hi == lo);
//   a_zp = nearbyint(clamp(-lo / a_scale, 0, 255)); a_q = nearbyint(clamp(a / a_scale, -a_zp, 255 - a_zp)) + a_zp
// (float arithmetic, round half to even). The integer sum is exact; one int -> float rounding, then one
// multiply by the product of the scales taken in float first: onnxruntime's MLAS output processor.
// A holding NaN or Inf makes every output NaN.
//
//   Uint8DynamicProduct p = Uint8DynamicProduct::make(DType::kInt8, w, K, N, scale, zero);  // once
//   std::vector<char> scratch(p.scratch_bytes(M));                                          // once
//   p.run(M, a, /*lda=*/K, y, scratch.data());                                              // per call
//
// Paths: int8 weights with zero points all 0 (what onnxruntime's quantize_dynamic makes, and what its
// per-channel DynamicQuantizeLSTM requires) run on int8_dynamic_gemm's packed blocks (AVX-512 VNNI,
// AVX2, portable; same bits) with the rows' zero point as the correction; anything else (uint8 weights)
// on a portable exact loop. Columns are split over the current thread pool; a dot product never is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/quant/int8_dynamic_gemm.h"
#include "core/dtype.h"

namespace sdx::cpu {

// onnxruntime's per-tensor uint8 parameters for n values (the rule above); false when they hold NaN or Inf.
bool uint8_dynamic_params(const float* a, int64_t n, float* scale, int32_t* zero_point);

class Uint8DynamicProduct {
 public:
  Uint8DynamicProduct() = default;
  // w: [K, N] of w_type (kInt8 or kUint8), row-major; scale and zero_point: N values each (a per-tensor
  // quantization repeats its one value). Copies what it needs.
  static Uint8DynamicProduct make(DType w_type, const void* w, int64_t K, int64_t N, const float* scale,
                                  const void* zero_point);

  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  // Bytes of scratch run() needs for M rows.
  size_t scratch_bytes(int64_t M) const;
  // y [M, N] (row stride N) from a [M, K] (row stride lda). Never allocates. descending: each thread's
  // column blocks in reverse order (the same bits). A caller repeating the product with weights larger
  // than L2 (an LSTM's R at every step) alternates it, so the blocks read last, still in cache, come first.
  void run(int64_t M, const float* a, int64_t lda, float* y, void* scratch, bool descending = false) const;

 private:
  int64_t K_ = 0, N_ = 0;
  bool packed_ = false;                    // int8_dynamic_gemm's blocks, else the exact loop
  Int8DynamicWeights blocks_;              // packed_
  std::vector<int32_t> w_int_;             // !packed_: [K, N] of w - w_zp
  std::vector<float> scale_;               // !packed_: N
};

}  // namespace sdx::cpu
