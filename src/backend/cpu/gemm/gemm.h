// Reference CPU GEMM: C = alpha * op(A) * op(B) + beta * C, row-major.
//
//   // Y[M,N] = X[M,K] * W[N,K]^T  (a fully connected layer)
//   cpu::gemm(false, true, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
//
// op(A) is A (M x K, row stride lda) or, with trans_a, A^T where A is stored K x M
// (row stride lda). Likewise op(B) is K x N, or B stored N x K when trans_b.
// C is M x N with row stride ldc. When beta == 0, C is not read (it may hold
// garbage or NaN). Any of M, N, K may be zero (K == 0 gives C = beta * C).
//
// Float32 with M <= kSmallMMaxRows (8), no transposes and N >= 8 takes the small-M kernel
// (small_m_gemm.h: one FMA chain per element, columns split over the session's pool). Float32
// with N < 8 and contiguous op(B) columns (trans_b, or N == 1 with ldb == 1) computes each element as
// one dot product (dot_rows.h), at any M.
//
// Other float32 products go to OpenBLAS when it runs kernels for this CPU, else (no OpenBLAS, or an
// OpenBLAS that fell back to an older core's kernels) to sdx's register-tiled kernel on CPUs with AVX2 or
// AVX-512 (gemm/tiled_sgemm.h), split over the session's pool by rows or columns of C. What remains
// (float64, CPUs without AVX2) runs the cache-blocked reference kernel here: panels of op(B) are packed
// so the inner loop is a contiguous, vectorizable axpy; it is single-threaded, reentrant and
// thread-safe.
#pragma once

#include <cstdint>

namespace sdx::cpu {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

// The same computation with caller-provided scratch instead of a per-call allocation (for
// bound kernels, which allocate it once): workspace holds at least
// gemm_workspace_size(N, K) elements of the matrix type. Results are bitwise those of the
// overloads above.
int64_t gemm_workspace_size(int64_t N, int64_t K);
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc, float* workspace);
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc, double* workspace);

// Integer matmul for MatMul/MatMulInteger-style ops: C = op(A) * op(B), accumulated in
// int64 and cast to T on store (wraps like numpy for narrow types). No alpha/beta.
template <typename T>
void gemm_int(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
              int64_t ldb, T* C, int64_t ldc);
// Same with caller-provided accumulators: acc holds at least max(N, 0) elements.
template <typename T>
void gemm_int(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
              int64_t ldb, T* C, int64_t ldc, int64_t* acc);

}  // namespace sdx::cpu
