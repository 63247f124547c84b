// Quantizing float32 to 8-bit integers and back, one contiguous run sharing one scale and zero point:
// the inner loops of QuantizeLinear and DequantizeLinear (kernels/quant_linear.cc) in the common case of
// QDQ models. SSE2 (x86-64's baseline) where the compiler targets it, a portable loop elsewhere; both
// give the bits of the onnx reference's arithmetic:
//
//   quantize:    y = saturate(rint(x / s) + zp), rint half to even; a NaN, an infinity or a quotient
//                outside int32 counts as INT32_MIN before zp is added (numpy's rint(q).astype(int32)),
//                so it saturates to the type's lowest value
//   dequantize:  y = (float(x) - float(zp)) * s
//
// Every division and product is one IEEE float32 operation, which equals the reference's double one
// rounded to float32 (53 bits are more than twice 24 plus 2).
#pragma once

#include <cstdint>

namespace sdx::cpu {

void quantize_row(const float* x, float s, int32_t zp, uint8_t* y, int64_t n);
void quantize_row(const float* x, float s, int32_t zp, int8_t* y, int64_t n);
void dequantize_row(const uint8_t* x, float s, float zp, float* y, int64_t n);
void dequantize_row(const int8_t* x, float s, float zp, float* y, int64_t n);

// The same with a scale and zero point per element (per-axis quantization along the last axis: one row
// of a weight with per-column scales); zp may be null (0).
void quantize_channels(const float* x, const float* s, const uint8_t* zp, uint8_t* y, int64_t n);
void quantize_channels(const float* x, const float* s, const int8_t* zp, int8_t* y, int64_t n);
void dequantize_channels(const uint8_t* x, const float* s, const uint8_t* zp, float* y, int64_t n);
void dequantize_channels(const int8_t* x, const float* s, const int8_t* zp, float* y, int64_t n);

}  // namespace sdx::cpu
