// MatMul (numpy semantics: batched broadcasting, 1-D operands) and Gemm.
//
// A float32 MatMul whose B is a 2-D graph initializer multiplies all of A's rows at once ([B*M, K] x
// [K, N]) on oneDNN with B packed once (backend/cpu/onednn/onednn_matmul.h, the path of sdx.Linear), when
// there are more rows than the small-M kernel takes and oneDNN takes the shape; run() and the bound
// call choose the same way (from init()'s node and the shapes). Everything else goes through gemm().
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/small_m_gemm.h"
#include "backend/cpu/onednn/onednn_matmul.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// Scratch for one product of fixed sizes, allocated once: float copies of 16-bit float
// operands (A, B, an optional C) and of the output, and the gemm workspace (float types)
// or the int64 accumulators (integer types). run() makes one per call; a bound call keeps
// one, so both go through the same arithmetic.
template <typename T>
class ComputeScratch {
 public:
  using C = compute_t<T>;
  static constexpr bool kHalf = !std::is_same_v<T, C>;

  ComputeScratch(int64_t a_numel, int64_t b_numel, int64_t c_numel, int64_t y_numel, int64_t N, int64_t K) {
    if constexpr (kHalf) {
      a_.resize(static_cast<size_t>(a_numel));
      b_.resize(static_cast<size_t>(b_numel));
      c_.resize(static_cast<size_t>(c_numel));
      y_.resize(static_cast<size_t>(y_numel));
    }
    if constexpr (std::is_floating_point_v<C>)
      ws_.resize(static_cast<size_t>(gemm_workspace_size(N, K)));
    else
      acc_.resize(static_cast<size_t>(N > 0 ? N : 0));
  }

  // t (n elements) in the compute type: t itself, or its float copy.
  const C* in_a(const T* t, int64_t n) { return widened(t, n, a_); }
  const C* in_b(const T* t, int64_t n) { return widened(t, n, b_); }
  const C* in_c(const T* t, int64_t n) { return widened(t, n, c_); }
  // Where to compute the output y (y itself, or a float buffer commit_y() stores into y).
  C* out(T* y) {
    if constexpr (kHalf)
      return y_.data();
    else
      return y;
  }
  void commit_y(T* y) {
    if constexpr (kHalf) {
      for (size_t i = 0; i < y_.size(); ++i) y[i] = from_f32<T>(y_[i]);
    }
  }

  // C[M,N] = op(A) op(B) (+ beta C when beta != 0) in the compute type.
  void matmul_2d(bool ta, bool tb, int64_t M, int64_t N, int64_t K, C alpha, const C* A, int64_t lda, const C* B,
                 int64_t ldb, C beta, C* out, int64_t ldc) {
    if constexpr (std::is_floating_point_v<C>) {
      gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, out, ldc, ws_.data());
    } else {
      // Integer MatMul has no alpha/beta (Gemm handles its int scaling itself).
      (void)alpha;
      (void)beta;
      gemm_int<C>(ta, tb, M, N, K, A, lda, B, ldb, out, ldc, acc_.data());
    }
  }

 private:
  static const C* widened(const T* t, int64_t n, std::vector<C>& copy) {
    if constexpr (kHalf) {
      for (int64_t i = 0; i < n; ++i) copy[static_cast<size_t>(i)] = to_f32(t[i]);
      return copy.data();
    } else {
      (void)n;
      (void)copy;
      return t;
    }
  }

  std::vector<C> a_, b_, c_, y_;
  std::vector<C> ws_;
  std::vector<int64_t> acc_;
};

// ---- MatMul ------------------------------------------------------------------

// Sizes of a MatMul: out[b] = A[b] (M x K) * B[b] (K x N) for every broadcast batch b.
struct MatMulGeometry {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> a_off, b_off;  // element offset of each batch's A and B matrix
  Shape out_shape;
};

Result<MatMulGeometry> matmul_geometry(const Shape& a, const Shape& b) {
  if (a.rank() < 1 || b.rank() < 1) return invalid_argument("MatMul inputs must have rank >= 1");
  MatMulGeometry g;
  // Promote 1-D operands: A -> [1, K], B -> [K, 1]; the added dim is dropped from the output.
  std::vector<int64_t> ad = a.dims(), bd = b.dims();
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
  if (bd[bd.size() - 2] != K)
    return invalid_argument("MatMul inner dimensions differ: A " + a.to_string() + ", B " + b.to_string());
  std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  SDX_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes(Shape(a_batch), Shape(b_batch)), "MatMul batch dims");
  std::vector<int64_t> out_dims = batch.dims();
  if (!a_vec) out_dims.push_back(M);
  if (!b_vec) out_dims.push_back(N);
  SDX_ASSIGN_OR_RETURN(g.out_shape, Shape::make(out_dims), "MatMul output");
  g.M = M;
  g.N = N;
  g.K = K;

  // Offsets of each batch's A and B matrices (broadcast batch dims repeat a matrix).
  const int br = batch.rank();
  const int64_t nbatch = batch.numel();
  g.a_off.resize(static_cast<size_t>(nbatch));
  g.b_off.resize(static_cast<size_t>(nbatch));
  std::vector<int64_t> idx(static_cast<size_t>(br), 0);
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    int64_t ao = 0, bo = 0, as = 1, bs = 1;
    for (int d = br - 1; d >= 0; --d) {
      const int ai = d - (br - static_cast<int>(a_batch.size()));
      const int bj = d - (br - static_cast<int>(b_batch.size()));
      if (ai >= 0) {
        if (a_batch[ai] != 1) ao += idx[d] * as;
        as *= a_batch[ai];
      }
      if (bj >= 0) {
        if (b_batch[bj] != 1) bo += idx[d] * bs;
        bs *= b_batch[bj];
      }
    }
    g.a_off[bi] = ao * M * K;
    g.b_off[bi] = bo * K * N;
    for (int d = br - 1; d >= 0; --d) {
      if (++idx[d] < batch.dim(d)) break;
      idx[d] = 0;
    }
  }
  return g;
}

template <typename T>
void matmul(const MatMulGeometry& g, const T* a, int64_t a_numel, const T* b, int64_t b_numel, T* y,
            ComputeScratch<T>& scratch) {
  using C = compute_t<T>;
  const C* av = scratch.in_a(a, a_numel);
  const C* bv = scratch.in_b(b, b_numel);
  C* yo = scratch.out(y);
  const int64_t M = g.M, N = g.N, K = g.K;
  for (size_t bi = 0; bi < g.a_off.size(); ++bi) {
    scratch.matmul_2d(false, false, M, N, K, C(1), av + g.a_off[bi], K, bv + g.b_off[bi], N, C(0),
                      yo + static_cast<int64_t>(bi) * M * N, N);
  }
  scratch.commit_y(y);
}

#define SDX_MATMUL_TYPES float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t

class MatMulKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    b_is_initializer_ = onednn_matmul_weight(node, 1);
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.rank() < 1 || b.rank() < 1) return invalid_argument("MatMul inputs must have rank >= 1");
    if (a.dtype() != b.dtype()) return invalid_argument("MatMul inputs must have the same element type");
    SDX_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(a.shape(), b.shape()), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, a.dtype(), g.out_shape), "");
    if (const int64_t rows = onednn_rows(a, b, g)) {
      if (std::optional<Status> st = run_onednn_matmul(rows, g.K, g.N, FusedActivation(), a.data<float>(),
                                                       b.data<float>(), /*w_kept=*/true, nullptr, y.data<float>()))
        return *st;
    }
    return dispatch<SDX_MATMUL_TYPES>(
        a.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          ComputeScratch<T> scratch(a.numel(), b.numel(), 0, y.numel(), g.N, g.K);
          matmul<T>(g, a.data<T>(), a.numel(), b.data<T>(), b.numel(), y.data<T>(), scratch);
          return Status::ok();
        },
        "MatMul");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype()) return no_bound_form();
    Result<MatMulGeometry> g = matmul_geometry(a.shape(), b.shape());
    if (!g.is_ok() || !output_matches(ctx, 0, a.dtype(), g.value().out_shape)) return no_bound_form();
    if (auto bound = bind_small_m_packed(ctx, a, b, g.value())) return bound;
    if (const int64_t rows = onednn_rows(a, b, g.value())) {
      std::optional<std::unique_ptr<backend::BoundKernel>> onednn =
          bind_onednn_matmul(rows, g.value().K, g.value().N, FusedActivation(), a.data<float>(), b.data<float>(),
                             ctx.input_is_constant(1), /*w_kept=*/true, nullptr, ctx.output(0).data<float>(),
                             {ctx.packed_weights(), ctx.packed_key_prefix()});
      if (onednn) return std::move(*onednn);
    }
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_MATMUL_TYPES>(
        a.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const Tensor& y = ctx.output(0);
          auto scratch =
              std::make_unique<ComputeScratch<T>>(a.numel(), b.numel(), 0, y.numel(), g.value().N, g.value().K);
          bound = backend::bind_call([g = std::move(g.value()), pa = a.data<T>(), na = a.numel(), pb = b.data<T>(),
                                      nb = b.numel(), py = y.data<T>(), scratch = std::move(scratch)] {
            matmul<T>(g, pa, na, pb, nb, py, *scratch);
            return Status::ok();
          });
          return Status::ok();
        },
        "MatMul");
    return bound;
  }

 private:
  // The rows of the one [rows, K] x [K, N] product a float32 A [..., M, K] times a 2-D initializer B
  // makes (A's batches are contiguous, and so are Y's), when there are more than the small-M kernel
  // takes: a candidate for oneDNN (which may still decline). 0 otherwise.
  // A float32 A of at most kSmallMMaxRows rows (all batches together) times a constant 2-D B: the small-M
  // kernel on B packed once (small_m_gemm.h), shared with every bound call reading B. run() streams B
  // unpacked through gemm(); the arithmetic per element is the same FMA chain, so the bits are too.
  // Unpacked, each 64-column block reads B's rows at a stride of N floats: measured on MatMul [M, 1024] x
  // [1024, 1024] at 1 thread, 63 -> 40 us at M = 1 and 85 -> 43 us at M = 2 (bench/small_m_matmul.py).
  std::unique_ptr<backend::BoundKernel> bind_small_m_packed(const backend::PrepareContext& ctx, const Tensor& a,
                                                            const Tensor& b, const MatMulGeometry& g) const {
    if (!ctx.input_is_constant(1) || a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32 || b.rank() != 2 ||
        a.rank() < 1 || g.K <= 0)
      return nullptr;
    const int64_t rows = a.numel() / g.K;
    if (!small_m_gemm_applies(rows, g.N, g.K)) return nullptr;
    std::shared_ptr<const SmallMPackedWeights> packed =
        shared_small_m_packed(SmallMWeights{WeightType::kFloat32, b.data<float>(), g.N, nullptr}, g.K, g.N);
    return backend::bind_call([rows, N = g.N, K = g.K, pa = a.data<float>(), py = ctx.output(0).data<float>(),
                               packed = std::move(packed)] {
      small_m_gemm_packed(rows, N, K, pa, K, *packed, 1.f, 0.f, py, N, [](int64_t, int64_t) {});
      return Status::ok();
    });
  }

  int64_t onednn_rows(const Tensor& a, const Tensor& b, const MatMulGeometry& g) const {
    if (!b_is_initializer_ || a.dtype() != DType::kFloat32 || b.rank() != 2 || a.rank() < 2 || g.K <= 0) return 0;
    const int64_t rows = a.numel() / g.K;
    return rows > kSmallMMaxRows ? rows : 0;
  }

  bool b_is_initializer_ = false;
};

// ---- Gemm --------------------------------------------------------------------

struct GemmParams {
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
};

// Sizes of a Gemm: Y[M, N] = alpha op(A) op(B) + beta C, C broadcast from [c_rows, c_cols].
struct GemmGeometry {
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0;
  bool has_c = false;
  int64_t c_rows = 1, c_cols = 1;
};

// c: input C, or null when omitted.
Result<GemmGeometry> gemm_geometry(const GemmParams& p, const Tensor& a, const Tensor& b, const Tensor* c) {
  if (a.rank() != 2 || b.rank() != 2) return invalid_argument("Gemm inputs A and B must be 2-D");
  if (a.dtype() != b.dtype()) return invalid_argument("Gemm inputs must have the same element type");
  GemmGeometry g;
  g.M = p.trans_a ? a.shape()[1] : a.shape()[0];
  g.K = p.trans_a ? a.shape()[0] : a.shape()[1];
  const int64_t Kb = p.trans_b ? b.shape()[1] : b.shape()[0];
  g.N = p.trans_b ? b.shape()[0] : b.shape()[1];
  if (g.K != Kb)
    return invalid_argument("Gemm inner dimensions differ: A " + a.shape().to_string() + ", B " +
                            b.shape().to_string());
  g.lda = a.shape()[1];
  g.ldb = b.shape()[1];
  g.has_c = c != nullptr;
  if (c) {
    if (c->dtype() != a.dtype()) return invalid_argument("Gemm input C must have the element type of A");
    if (c->rank() > 2) return invalid_argument("Gemm input C must have rank <= 2");
    if (c->rank() >= 1) g.c_cols = c->shape()[c->rank() - 1];
    if (c->rank() == 2) g.c_rows = c->shape()[0];
    if ((g.c_rows != 1 && g.c_rows != g.M) || (g.c_cols != 1 && g.c_cols != g.N)) {
      return invalid_argument("Gemm input C " + c->shape().to_string() + " does not broadcast to [" +
                              std::to_string(g.M) + ", " + std::to_string(g.N) + "]");
    }
  }
  return g;
}

// pc: input C (c_numel elements) or null.
template <typename T>
void gemm_op(const GemmParams& p, const GemmGeometry& g, const T* pa, int64_t a_numel, const T* pb, int64_t b_numel,
             const T* pc, int64_t c_numel, T* y, ComputeScratch<T>& scratch) {
  using C = compute_t<T>;
  const int64_t M = g.M, N = g.N, K = g.K, c_rows = g.c_rows, c_cols = g.c_cols;
  const C* av = scratch.in_a(pa, a_numel);
  const C* bv = scratch.in_b(pb, b_numel);
  C* out = scratch.out(y);
  if constexpr (std::is_floating_point_v<C>) {
    C beta = C(0);
    if (pc && p.beta != 0.0f) {
      const C* c = scratch.in_c(pc, c_numel);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) out[i * N + j] = c[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
      beta = static_cast<C>(p.beta);
    }
    scratch.matmul_2d(p.trans_a, p.trans_b, M, N, K, static_cast<C>(p.alpha), av, g.lda, bv, g.ldb, beta, out, N);
  } else {
    scratch.matmul_2d(p.trans_a, p.trans_b, M, N, K, C(1), av, g.lda, bv, g.ldb, C(0), out, N);
    const C* c = pc;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double v = static_cast<double>(p.alpha) * static_cast<double>(out[i * N + j]);
        if (c)
          v += static_cast<double>(p.beta) *
               static_cast<double>(c[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)]);
        out[i * N + j] = static_cast<C>(v);
      }
    }
  }
  scratch.commit_y(y);
}

class GemmKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    p_.alpha = node.attr_float("alpha", 1.0f);
    p_.beta = node.attr_float("beta", 1.0f);
    p_.trans_a = node.attr_int("transA", 0) != 0;
    p_.trans_b = node.attr_int("transB", 0) != 0;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    SDX_ASSIGN_OR_RETURN(GemmGeometry g, gemm_geometry(p_, a, b, c), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, a.dtype(), Shape{g.M, g.N}), "");
    return dispatch<SDX_MATMUL_TYPES>(
        a.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const int64_t c_numel = c ? c->numel() : 0;
          ComputeScratch<T> scratch(a.numel(), b.numel(), c_numel, y.numel(), g.N, g.K);
          gemm_op<T>(p_, g, a.data<T>(), a.numel(), b.data<T>(), b.numel(), c ? c->data<T>() : nullptr, c_numel,
                     y.data<T>(), scratch);
          return Status::ok();
        },
        "Gemm");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* c = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Result<GemmGeometry> g = gemm_geometry(p_, a, b, c);
    if (!g.is_ok() || !output_matches(ctx, 0, a.dtype(), Shape{g.value().M, g.value().N})) return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_MATMUL_TYPES>(
        a.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const Tensor& y = ctx.output(0);
          const int64_t c_numel = c ? c->numel() : 0;
          auto scratch =
              std::make_unique<ComputeScratch<T>>(a.numel(), b.numel(), c_numel, y.numel(), g.value().N, g.value().K);
          bound = backend::bind_call([p = p_, g = g.value(), pa = a.data<T>(), na = a.numel(), pb = b.data<T>(),
                                      nb = b.numel(), pc = c ? c->data<T>() : nullptr, c_numel, py = y.data<T>(),
                                      scratch = std::move(scratch)] {
            gemm_op<T>(p, g, pa, na, pb, nb, pc, c_numel, py, *scratch);
            return Status::ok();
          });
          return Status::ok();
        },
        "Gemm");
    return bound;
  }

 private:
  GemmParams p_;
};

#undef SDX_MATMUL_TYPES

const backend::KernelRegistrar kMatMul({"MatMul", "", 1, backend::kAnyOpset, backend::kernel_factory<MatMulKernel>()});
const backend::KernelRegistrar kGemm({"Gemm", "", 1, backend::kAnyOpset, backend::kernel_factory<GemmKernel>()});

}  // namespace
}  // namespace sdx::cpu
