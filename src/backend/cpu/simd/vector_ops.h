// Vectorized float kernels, run at the instruction-set level chosen once per process (isa.h):
// AVX-512F or AVX2/FMA where the CPU has them, a portable scalar fallback elsewhere.
//
//   simd::gelu(x, y, n);                               // y = Gelu(x), about 2 ulp
//   simd::binary_vv(simd::BinaryOp::kAdd, a, b, y, n);  // y = a + b
//   simd::softmax_row(x, y, n);
//
// These are single-threaded building blocks over one contiguous range; kernels split larger
// work over the session's pool with cpu::parallel_for (thread_pool.h). Each element of a map
// (exp ... swish, binary_*) is computed by the same code wherever the range is cut, so a kernel
// gives the same bits at every thread count; the row functions reduce in a fixed order. NaN in gives
// NaN out (tests/backend/cpu/simd/vector_ops_test.cc), but which NaN is not specified: where two NaNs
// meet (Sigmoid's e and 1 / (1 + e), Swish's x * sigmoid(x)) the compiler may order a product's
// operands differently in a loop's unrolled body and its tail, so a NaN's sign may depend on where
// the range is cut; numbers never do.
#pragma once

#include <cstdint>

namespace sdx::cpu::simd {

// y[i] = f(x[i]) for i < n; y may equal x (not overlap otherwise).
void exp(const float* x, float* y, int64_t n);
void erf(const float* x, float* y, int64_t n);
void tanh(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void gelu(const float* x, float* y, int64_t n);       // 0.5 x (1 + erf(x / sqrt 2))
void gelu_tanh(const float* x, float* y, int64_t n);  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void swish(const float* x, float* y, int64_t n, float alpha);  // x sigmoid(alpha x)
void relu(const float* x, float* y, int64_t n);  // x <= 0 ? +0 : x (exact; NaN passes)

// Exact IEEE arithmetic (the same bits as the scalar expression).
enum class BinaryOp { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3 };
void binary_vv(BinaryOp op, const float* a, const float* b, float* y, int64_t n);  // a[i] op b[i]
void binary_vs(BinaryOp op, const float* a, float b, float* y, int64_t n);         // a[i] op b
void binary_sv(BinaryOp op, float a, const float* b, float* y, int64_t n);         // a op b[i]

// Softmax of one contiguous row: e = exp(x - max) (max ignoring NaN), sum in double,
// y = e * float(1 / sum). LogSoftmax: y = x - (max + float(log(sum))). y may equal x.
void softmax_row(const float* x, float* y, int64_t n);
void log_softmax_row(const float* x, float* y, int64_t n);

// LayerNormalization (rms: RMSNormalization) of one row of n values: statistics in double,
// y = (x - mean) * inv_std * scale + bias (scale, bias: n values each). mean / inv_std receive
// the statistics when not null.
void norm_row(const float* x, float* y, const float* scale, const float* bias, int64_t n, float epsilon, bool rms,
              double* mean, double* inv_std);

// Reductions of one row in a fixed order: sums in double; max / min return the row's first
// NaN if it has one (ReduceMax / ReduceMin semantics), -inf / +inf for an empty row.
double row_sum(const float* x, int64_t n);
double row_sum_squares(const float* x, int64_t n);
double row_sum_abs(const float* x, int64_t n);
float row_max(const float* x, int64_t n);
float row_min(const float* x, int64_t n);

// One LSTM step (default activations, no peepholes, no clip) for one batch entry of hidden size n, gates
// in ONNX order i, o, f, c: gate_k = pre_k + (rh_k + rb_k); i, o, f = Sigmoid; g = Tanh;
// c = f * c + i * g; h = o * Tanh(c). c and h are updated in place. Every product and sum is rounded on its
// own (no fused multiply-add), so the bits are those of the same formulas computed op by op with the
// functions above.
void lstm_cell(const float* pre, const float* rh, const float* rb, float* c, float* h, int64_t n);

}  // namespace sdx::cpu::simd
