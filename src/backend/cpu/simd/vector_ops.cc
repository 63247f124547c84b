#include "backend/cpu/simd/vector_ops.h"

#include "backend/cpu/simd/kernel_table.h"

namespace sdx::cpu::simd {

void exp(const float* x, float* y, int64_t n) { active_table().exp(x, y, n); }
void erf(const float* x, float* y, int64_t n) { active_table().erf(x, y, n); }
void tanh(const float* x, float* y, int64_t n) { active_table().tanh(x, y, n); }
void sigmoid(const float* x, float* y, int64_t n) { active_table().sigmoid(x, y, n); }
void gelu(const float* x, float* y, int64_t n) { active_table().gelu(x, y, n); }
void gelu_tanh(const float* x, float* y, int64_t n) { active_table().gelu_tanh(x, y, n); }
void swish(const float* x, float* y, int64_t n, float alpha) { active_table().swish(x, y, n, alpha); }
void relu(const float* x, float* y, int64_t n) { active_table().relu(x, y, n); }

void binary_vv(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  active_table().binary_vv[static_cast<int>(op)](a, b, y, n);
}
void binary_vs(BinaryOp op, const float* a, float b, float* y, int64_t n) {
  active_table().binary_vs[static_cast<int>(op)](a, &b, y, n);
}
void binary_sv(BinaryOp op, float a, const float* b, float* y, int64_t n) {
  active_table().binary_sv[static_cast<int>(op)](&a, b, y, n);
}

void softmax_row(const float* x, float* y, int64_t n) { active_table().softmax_row(x, y, n); }
void log_softmax_row(const float* x, float* y, int64_t n) { active_table().log_softmax_row(x, y, n); }

void norm_row(const float* x, float* y, const float* scale, const float* bias, int64_t n, float epsilon, bool rms,
              double* mean, double* inv_std) {
  active_table().norm_row(x, y, scale, bias, n, epsilon, rms, mean, inv_std);
}

double row_sum(const float* x, int64_t n) { return active_table().row_sum(x, n); }
double row_sum_squares(const float* x, int64_t n) { return active_table().row_sum_squares(x, n); }
double row_sum_abs(const float* x, int64_t n) { return active_table().row_sum_abs(x, n); }
float row_max(const float* x, int64_t n) { return active_table().row_max(x, n); }
float row_min(const float* x, int64_t n) { return active_table().row_min(x, n); }

void lstm_cell(const float* pre, const float* rh, const float* rb, float* c, float* h, int64_t n) {
  active_table().lstm_cell(pre, rh, rb, c, h, n);
}

}  // namespace sdx::cpu::simd
