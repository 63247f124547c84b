// Cache-blocked reference GEMM (see gemm.h).
//
// Blocking: op(B) is packed in KC x NC panels (row-major, contiguous), so the
// inner loop is an axpy over NC contiguous columns that compilers vectorize.
// Four rows of C are updated per pass over a packed row of B, which quarters the
// B traffic. Panel sizes keep the packed panel in L2 and four C row slices in L1.
#include "backend/cpu/gemm/gemm.h"

#if SDX_WITH_OPENBLAS
#include <cblas.h>
#endif

#include "backend/cpu/gemm/dot_rows.h"
#include "backend/cpu/gemm/tiled_sgemm.h"
#include "backend/cpu/gemm/small_m_gemm.h"
#include "backend/cpu/simd/isa.h"
#include "backend/cpu/threading/thread_pool.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <cstdint>
#include <cstring>
#include <vector>

namespace sdx::cpu {
namespace {

constexpr int64_t kKc = 256;  // rows of the packed B panel
constexpr int64_t kNc = 512;  // columns of the packed B panel

template <typename T>
void scale_c(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * ldc;
    if (beta == T(0)) {
      std::fill(c, c + N, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
  }
}

// Packs op(B)[k0:k0+kc, n0:n0+nc] into dst (kc x nc, row-major).
template <typename T>
void pack_b(bool trans_b, const T* B, int64_t ldb, int64_t k0, int64_t kc, int64_t n0, int64_t nc, T* dst) {
  if (!trans_b) {
    for (int64_t k = 0; k < kc; ++k) {
      const T* src = B + (k0 + k) * ldb + n0;
      std::copy(src, src + nc, dst + k * nc);
    }
  } else {
    // op(B)[k][n] = B[n][k]
    for (int64_t n = 0; n < nc; ++n) {
      const T* src = B + (n0 + n) * ldb + k0;
      for (int64_t k = 0; k < kc; ++k) dst[k * nc + n] = src[k];
    }
  }
}

template <typename T>
inline T a_at(bool trans_a, const T* A, int64_t lda, int64_t i, int64_t k) {
  return trans_a ? A[k * lda + i] : A[i * lda + k];
}

constexpr int64_t kMr = 4;  // rows of C per micro-tile

// Columns of C per micro-tile: two 16-byte vectors (8 floats, 4 doubles).
template <typename T>
constexpr int64_t kNr = 2 * static_cast<int64_t>(16 / sizeof(T));

// C[0:rows, 0:kNr] += sum_k ap[k * kMr + r] * bp[k * ldb + j] for one kMr x kNr tile.
// The tile lives in eight vector registers (GCC/Clang vector extensions, plain SSE2 or
// better), so each k step costs two loads of B, four broadcasts and eight multiply-adds.
template <typename T>
void micro_tile(int64_t kc, const T* __restrict ap, const T* __restrict bp, int64_t ldb, int64_t rows, T* C,
                int64_t ldc) {
  typedef T V __attribute__((vector_size(16)));
  constexpr int64_t L = static_cast<int64_t>(16 / sizeof(T));
  V c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {};
  for (int64_t k = 0; k < kc; ++k) {
    V b0, b1;
    std::memcpy(&b0, bp + k * ldb, sizeof(V));
    std::memcpy(&b1, bp + k * ldb + L, sizeof(V));
    const T* a = ap + k * kMr;
    const V a0 = V{} + a[0], a1 = V{} + a[1], a2 = V{} + a[2], a3 = V{} + a[3];
    c00 += a0 * b0;
    c01 += a0 * b1;
    c10 += a1 * b0;
    c11 += a1 * b1;
    c20 += a2 * b0;
    c21 += a2 * b1;
    c30 += a3 * b0;
    c31 += a3 * b1;
  }
  const V acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int64_t r = 0; r < rows; ++r) {
    T* c = C + r * ldc;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < L; ++j) c[h * L + j] += acc[r][h][j];
  }
}

// Elements of the packed B panel and of the packed A panel.
int64_t packed_b_size(int64_t N, int64_t K) { return N <= 0 || K <= 0 ? 0 : std::min(K, kKc) * std::min(N, kNc); }
int64_t packed_a_size(int64_t K) { return K <= 0 ? 0 : std::min(K, kKc) * kMr; }

// workspace: packed_b_size(N, K) + packed_a_size(K) elements.
template <typename T>
void gemm_impl(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
               const T* B, int64_t ldb, T beta, T* C, int64_t ldc, T* workspace) {
  if (M <= 0 || N <= 0) return;
  scale_c(M, N, beta, C, ldc);
  if (K <= 0 || alpha == T(0)) return;

  T* const packed = workspace;
  T* const apack = workspace + packed_b_size(N, K);
  for (int64_t n0 = 0; n0 < N; n0 += kNc) {
    const int64_t nc = std::min(kNc, N - n0);
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      const int64_t kc = std::min(kKc, K - k0);
      pack_b(trans_b, B, ldb, k0, kc, n0, nc, packed);
      const T* bp = packed;
      for (int64_t i = 0; i < M; i += kMr) {
        const int64_t rows = std::min(kMr, M - i);
        // A panel: alpha * op(A)[i:i+rows, k0:k0+kc], k-major, zero-filled past M.
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t r = 0; r < kMr; ++r)
            apack[k * kMr + r] = r < rows ? alpha * a_at(trans_a, A, lda, i + r, k0 + k) : T(0);
        T* crow = C + i * ldc + n0;
        int64_t j = 0;
        for (; j + kNr<T> <= nc; j += kNr<T>) micro_tile(kc, apack, bp + j, nc, rows, crow + j, ldc);
        if (j < nc) {
          for (int64_t r = 0; r < rows; ++r) {
            T* c = crow + r * ldc;
            for (int64_t k = 0; k < kc; ++k) {
              const T a = apack[k * kMr + r];
              const T* b = bp + k * nc;
              for (int64_t jj = j; jj < nc; ++jj) c[jj] += a * b[jj];
            }
          }
        }
      }
    }
  }
}

// Allocates the workspace for one call (the overloads without one).
template <typename T>
void gemm_alloc(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  // Nothing is packed when these return before the loops: skip the allocation.
  const bool packs = M > 0 && N > 0 && K > 0 && alpha != T(0);
  std::vector<T> workspace(packs ? static_cast<size_t>(gemm_workspace_size(N, K)) : 0);
  gemm_impl<T>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, workspace.data());
}

}  // namespace

int64_t gemm_workspace_size(int64_t N, int64_t K) { return packed_b_size(N, K) + packed_a_size(K); }

namespace {
#if SDX_WITH_OPENBLAS
// OpenBLAS's sgemm (row-major through CBLAS; with beta == 0, C is not read). It takes its buffers from
// a pool allocated once, so a bound call stays free of per-call heap allocations.
//
// OpenBLAS runs single-threaded: the session's intra-op pool splits the call instead (split_sgemm below),
// so its threads never compete with ours.
// Rounding and the thread count: OpenBLAS picks its kernel by the size of each call (Debian's 0.3.21: a
// small-matrix kernel summing all of K in one chain below about 10^6 multiply-adds, K in blocks above), so
// a piece of a split call may round differently from the whole call. The same thread count always gives
// the same bits (replay stays bitwise); different thread counts may differ in the last bits once K
// exceeds OpenBLAS's K block (seen at K = 768, never at K <= 512 over M, N up to 257 and 512).
const bool kBlasSingleThreaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

// OpenBLAS picks its kernels by CPU model when it loads. On a model it does not know it falls back to
// an older core's kernels, which round small and large calls in different orders (the results depend
// on how the pool splits C) and are slower than sdx's tiled kernel (gemm/tiled_sgemm.h):
// - a hypervisor's generic "Intel(R) Xeon(R) Processor" with AVX-512: Debian's 0.3.21 runs Prescott
//   (SSE3);
// - an AMD Zen 5 (family 1Ah, AVX-512): 0.3.21 runs its Haswell (AVX2) kernels. There the tiled
//   AVX-512 kernel made the zoo's GEMM-bound models 15-35% faster (fsmn_vad 0.28 -> 0.18 ms,
//   smart_turn_whisper_enc 26.9 -> 22.0 ms at 1 thread; bench/zoo.py, OPENBLAS_CORETYPE=Prescott
//   against the default), within a few percent of OpenBLAS's own AVX-512 (SkylakeX) kernels.
// So on an AVX-512 CPU only OpenBLAS's AVX-512 cores count; on an AVX2 CPU anything from Haswell on.
// Read once per process; OPENBLAS_CORETYPE, read by OpenBLAS itself, names a core explicitly.
bool blas_core_matches_cpu() {
  static const bool matches = [] {
    if (simd::detected_isa() == simd::Isa::kScalar) return true;
    std::string core = openblas_get_corename();
    std::transform(core.begin(), core.end(), core.begin(), [](unsigned char c) { return std::tolower(c); });
    if (simd::detected_isa() == simd::Isa::kAvx512)
      return core == "skylakex" || core == "cooperlake" || core == "sapphirerapids";
    for (const char* weak : {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "sandybridge", "katmai",
                             "coppermine", "northwood", "banias", "opteron", "barcelona", "bobcat", "bulldozer",
                             "piledriver", "steamroller", "excavator", "athlon", "unknown"})
      if (core == weak) return false;
    return true;
  }();
  return matches;
}
#endif

// Whether float GEMM blocks go to sdx's tiled kernel: on a CPU with AVX2 or AVX-512 when sdx is built
// without OpenBLAS, or when OpenBLAS runs an older core's kernels than this CPU's (above). Its
// results do not depend on how the pool splits C; it needs no JIT step, where oneDNN's sgemm (the
// previous stand-in) spent 30-65 ms generating kernels in a process's first call.
bool tiled_blocks() {
#if SDX_WITH_OPENBLAS
  if (blas_core_matches_cpu()) return false;
#endif
  return tiled_sgemm_available();
}

void sgemm_block(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (tiled_blocks()) {
    tiled_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#if SDX_WITH_OPENBLAS
  (void)kBlasSingleThreaded;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
              static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
#endif
}

// A float GEMM on OpenBLAS or the tiled kernel, split over the session's pool by rows of C when M is the
// larger side, else by column blocks (the tiled kernel's strip width, 16 for OpenBLAS). False where
// neither runs it: the reference kernel's shapes (degenerate ones keep its exact semantics) or no library.
bool split_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0 || alpha == 0.f) return false;
  const bool tiled = tiled_blocks();
#if !SDX_WITH_OPENBLAS
  if (!tiled) return false;
#endif
  // At least ~256 K multiply-adds per chunk, or the split costs more than it saves.
  constexpr int64_t kMinWork = int64_t{1} << 18;
  const int64_t threads = current_num_threads();
  if (threads <= 1 || M * N * K < 2 * kMinWork) {
    sgemm_block(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return true;
  }
  if (M >= N && M >= 2 * threads) {
    parallel_for(M, std::max<int64_t>(1, kMinWork / (N * K)), [&](int64_t m0, int64_t m1) {
      const float* a = trans_a ? A + m0 : A + m0 * lda;
      sgemm_block(trans_a, trans_b, m1 - m0, N, K, alpha, a, lda, B, ldb, beta, C + m0 * ldc, ldc);
    });
  } else {
    const int64_t cols = tiled ? tiled_sgemm_strip() : 16;
    const int64_t blocks = (N + cols - 1) / cols;
    parallel_for(blocks, std::max<int64_t>(1, kMinWork / (M * K * cols)), [&](int64_t b0, int64_t b1) {
      const int64_t n0 = b0 * cols, n1 = std::min(N, b1 * cols);
      const float* b = trans_b ? B + n0 * ldb : B + n0;
      sgemm_block(trans_a, trans_b, M, n1 - n0, K, alpha, A, lda, b, ldb, beta, C + n0, ldc);
    });
  }
  return true;
}
}  // namespace

namespace {
// A few rows times a row-major B (a GEMV at M = 1): the small-M kernel streams B once, split over the
// pool by columns (small_m_gemm.h). Degenerate shapes keep the reference path's semantics.
bool small_m_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (trans_a || trans_b || !small_m_gemm_applies(M, N, K) || alpha == 0.f) return false;
  const SmallMWeights w{WeightType::kFloat32, B, ldb, nullptr};
  small_m_gemm(M, N, K, A, lda, w, alpha, beta, C, ldc, [](int64_t, int64_t) {});
  return true;
}

// Each element of C one dot product (dot_rows.h), in blocks of 8 columns split over the pool, where op(B)'s
// columns are contiguous (B transposed, or a single column) and either
// - there are fewer than 8 columns, e.g. a classifier head [M, K] x [K, 1]: the blocked kernel would pack
//   B and run its scalar column tail, and a BLAS call costs more to set up than the product; or
// - there are at most kSmallMMaxRows rows and the tiled kernel would take the product (an RNN step's
//   h W^T at batch 1, a decode step's q K^T): it packs all of B per call, 27.9 us at M = 1, N = K = 256
//   against 4.6 us for oneDNN's GEMV path, one thread.
// Every element is one dot product whatever the split, so results do not depend on the thread count.
bool narrow_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (trans_a || N <= 0 || M <= 0 || K <= 0 || alpha == 0.f || !(trans_b || N == 1)) return false;
  // op(B) column n: B + n * ldb (rows of a transposed B) or B itself (one column, unit stride when ldb == 1).
  if (!trans_b && ldb != 1) return false;
  if (N >= 8 && !(trans_b && M <= kSmallMMaxRows && tiled_blocks())) return false;
  const int64_t col_stride = trans_b ? ldb : K;
  auto columns = [&](int64_t b0, int64_t b1) {
    float dots[8];
    for (int64_t n0 = b0 * 8; n0 < std::min(N, b1 * 8); n0 += 8) {  // 8 columns of op(B) stay in cache for every row
      const int64_t w = std::min<int64_t>(8, N - n0);
      for (int64_t m = 0; m < M; ++m) {
        float* c = C + m * ldc;
        dot_rows(A + m * lda, B + n0 * col_stride, col_stride, w, K, alpha, dots);
        for (int64_t n = 0; n < w; ++n) c[n0 + n] = beta == 0.f ? dots[n] : beta * c[n0 + n] + dots[n];
      }
    }
  };
  const int64_t blocks = (N + 7) / 8;
  if (blocks == 1) {
    columns(0, 1);
  } else {
    // At least ~32K multiply-adds per chunk, or the hand-off costs more than it saves.
    parallel_for(blocks, std::max<int64_t>(1, (int64_t{1} << 15) / (M * 8 * K)), columns);
  }
  return true;
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (small_m_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  if (narrow_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  if (split_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  gemm_alloc<float>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_alloc<double>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc, float* workspace) {
  if (small_m_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  if (narrow_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  if (split_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  gemm_impl<float>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, workspace);
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc, double* workspace) {
  gemm_impl<double>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, workspace);
}

template <typename T>
void gemm_int(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
              int64_t ldb, T* C, int64_t ldc) {
  std::vector<int64_t> acc(static_cast<size_t>(std::max<int64_t>(N, 0)));
  gemm_int<T>(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, acc.data());
}

template <typename T>
void gemm_int(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
              int64_t ldb, T* C, int64_t ldc, int64_t* acc) {
  for (int64_t i = 0; i < M; ++i) {
    std::fill(acc, acc + std::max<int64_t>(N, 0), 0);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t a = static_cast<int64_t>(a_at(trans_a, A, lda, i, k));
      if (a == 0) continue;
      if (!trans_b) {
        const T* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) acc[j] += a * static_cast<int64_t>(b[j]);
      } else {
        for (int64_t j = 0; j < N; ++j) acc[j] += a * static_cast<int64_t>(B[j * ldb + k]);
      }
    }
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = static_cast<T>(acc[j]);
  }
}

#define SDX_GEMM_INT_INSTANTIATE(T)                                                                                    \
  template void gemm_int<T>(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, int64_t); \
  template void gemm_int<T>(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, int64_t,  \
                            int64_t*);
SDX_GEMM_INT_INSTANTIATE(int8_t)
SDX_GEMM_INT_INSTANTIATE(int16_t)
SDX_GEMM_INT_INSTANTIATE(int32_t)
SDX_GEMM_INT_INSTANTIATE(int64_t)
SDX_GEMM_INT_INSTANTIATE(uint8_t)
SDX_GEMM_INT_INSTANTIATE(uint16_t)
SDX_GEMM_INT_INSTANTIATE(uint32_t)
SDX_GEMM_INT_INSTANTIATE(uint64_t)
#undef SDX_GEMM_INT_INSTANTIATE

}  // namespace sdx::cpu
