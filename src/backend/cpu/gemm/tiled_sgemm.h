// sdx's own register-tiled float GEMM: C = alpha * op(A) op(B) + beta * C, single-threaded (callers
// split C over the session's pool by rows or columns).
//
//   if (tiled_sgemm_available()) tiled_sgemm(false, true, M, N, K, 1.f, q, d, k, d, 0.f, scores, N);
//
// Why our own: on a CPU whose model OpenBLAS does not know, OpenBLAS runs its Prescott (SSE3) kernels, and
// oneDNN's sgemm, the stand-in, generates its JIT kernels on first use: 30-65 ms in the first call of a
// process on this VM (a 128x128x64 product, measured with a one-file program), which is most of a BERT
// encoder's cold start. This kernel needs no generation step and no library state.
//
// Method (Goto/BLIS blocking): op(B) is packed in panels of kKc rows by kNc columns, laid out as
// column strips of NR; op(A) in strips of MR rows by kKc. A micro-kernel keeps an MR x NR tile of C in
// registers for a whole strip (AVX-512: 8 x 32, 16 accumulators; AVX2: 6 x 16, 12 accumulators).
// Partial tiles use zero-padded packing and masked stores.
//
// Arithmetic, identical on both ISAs and for any split of C (so results do not depend on the thread
// count): each element is a fused multiply-add chain over k ascending within each kKc block, from 0;
// the first block stores alpha * acc, or fma(beta, C, alpha * acc) when beta != 0 (C unread when
// beta == 0); later blocks store fma(alpha, acc, C).
#pragma once

#include <cstdint>

namespace sdx::cpu {

// Whether this CPU runs the kernel (AVX2 with FMA, or AVX-512F).
bool tiled_sgemm_available();

// See above. Any M, N, K >= 0; lda/ldb/ldc are row strides of the stored matrices (row-major). Uses a
// per-thread packing buffer that grows to the largest call and is then reused (no allocation per call).
void tiled_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Columns per strip of the active kernel (32 or 16): a parallel split by columns in multiples of it
// leaves no partial strips inside the matrix.
int64_t tiled_sgemm_strip();

namespace detail {
// The kernels of both ISAs, for tests that compare them bit for bit (each requires its CPU features).
enum class TiledIsa { kAvx2, kAvx512 };
bool tiled_isa_supported(TiledIsa isa);
void tiled_sgemm_with(TiledIsa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
}  // namespace detail

}  // namespace sdx::cpu
