// MatMul (numpy semantics: batched broadcasting, 1-D operands) and Gemm.
#include <cstdint>
#include <vector>

#include "backend/cpu/conv_util.h"
#include "backend/cpu/dispatch.h"
#include "backend/cpu/gemm.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// C[M,N] = op(A) op(B) (+ beta C when beta != 0) for float/double/int compute types.
template <typename C>
void matmul_2d(bool ta, bool tb, int64_t M, int64_t N, int64_t K, C alpha, const C* A, int64_t lda, const C* B,
               int64_t ldb, C beta, C* out, int64_t ldc) {
  if constexpr (std::is_floating_point_v<C>) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, out, ldc);
  } else {
    // Integer MatMul has no alpha/beta (Gemm handles its int scaling itself).
    (void)alpha;
    (void)beta;
    gemm_int<C>(ta, tb, M, N, K, A, lda, B, ldb, out, ldc);
  }
}

class MatMulKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.rank() < 1 || b.rank() < 1) return invalid_argument("MatMul inputs must have rank >= 1");
    if (a.dtype() != b.dtype()) return invalid_argument("MatMul inputs must have the same element type");
    // Promote 1-D operands: A -> [1, K], B -> [K, 1]; the added dim is dropped from the output.
    std::vector<int64_t> ad = a.shape().dims(), bd = b.shape().dims();
    const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
    if (a_vec) ad.insert(ad.begin(), 1);
    if (b_vec) bd.push_back(1);
    const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
    if (bd[bd.size() - 2] != K) {
      return invalid_argument("MatMul inner dimensions differ: A " + a.shape().to_string() + ", B " +
                              b.shape().to_string());
    }
    std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
    SDX_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes(Shape(a_batch), Shape(b_batch)), "MatMul batch dims");
    std::vector<int64_t> out_dims = batch.dims();
    if (!a_vec) out_dims.push_back(M);
    if (!b_vec) out_dims.push_back(N);
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "MatMul output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, a.dtype(), out_shape), "");

    // Offsets of each batch's A and B matrices (broadcast batch dims repeat a matrix).
    const int br = batch.rank();
    const int64_t nbatch = batch.numel();
    std::vector<int64_t> a_off(static_cast<size_t>(nbatch)), b_off(static_cast<size_t>(nbatch));
    {
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
        a_off[bi] = ao * M * K;
        b_off[bi] = bo * K * N;
        for (int d = br - 1; d >= 0; --d) {
          if (++idx[d] < batch.dim(d)) break;
          idx[d] = 0;
        }
      }
    }
    return dispatch<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>(
        a.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using C = compute_t<T>;
          ComputeView<T> av(a), bv(b);
          ComputeOut<T> yo(y);
          for (int64_t bi = 0; bi < nbatch; ++bi) {
            matmul_2d<C>(false, false, M, N, K, C(1), av.data() + a_off[bi], K, bv.data() + b_off[bi], N, C(0),
                         yo.data() + bi * M * N, N);
          }
          yo.commit();
          return Status::ok();
        },
        "MatMul");
  }
};

class GemmKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    alpha_ = node.attr_float("alpha", 1.0f);
    beta_ = node.attr_float("beta", 1.0f);
    trans_a_ = node.attr_int("transA", 0) != 0;
    trans_b_ = node.attr_int("transB", 0) != 0;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.rank() != 2 || b.rank() != 2) return invalid_argument("Gemm inputs A and B must be 2-D");
    if (a.dtype() != b.dtype()) return invalid_argument("Gemm inputs must have the same element type");
    const int64_t M = trans_a_ ? a.shape()[1] : a.shape()[0];
    const int64_t K = trans_a_ ? a.shape()[0] : a.shape()[1];
    const int64_t Kb = trans_b_ ? b.shape()[1] : b.shape()[0];
    const int64_t N = trans_b_ ? b.shape()[0] : b.shape()[1];
    if (K != Kb) {
      return invalid_argument("Gemm inner dimensions differ: A " + a.shape().to_string() + ", B " +
                              b.shape().to_string());
    }
    const bool has_c = ctx.has_input(2);
    int64_t c_rows = 1, c_cols = 1;
    if (has_c) {
      const Tensor& c = ctx.input(2);
      if (c.dtype() != a.dtype()) return invalid_argument("Gemm input C must have the element type of A");
      if (c.rank() > 2) return invalid_argument("Gemm input C must have rank <= 2");
      if (c.rank() >= 1) c_cols = c.shape()[c.rank() - 1];
      if (c.rank() == 2) c_rows = c.shape()[0];
      if ((c_rows != 1 && c_rows != M) || (c_cols != 1 && c_cols != N)) {
        return invalid_argument("Gemm input C " + c.shape().to_string() + " does not broadcast to [" +
                                std::to_string(M) + ", " + std::to_string(N) + "]");
      }
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, a.dtype(), Shape{M, N}), "");
    return dispatch<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>(
        a.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using C = compute_t<T>;
          ComputeView<T> av(a), bv(b);
          ComputeOut<T> yo(y);
          C* out = yo.data();
          const int64_t lda = a.shape()[1], ldb = b.shape()[1];
          if constexpr (std::is_floating_point_v<C>) {
            C beta = C(0);
            if (has_c && beta_ != 0.0f) {
              ComputeView<T> cv(ctx.input(2));
              const C* c = cv.data();
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j)
                  out[i * N + j] = c[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
              beta = static_cast<C>(beta_);
            }
            gemm(trans_a_, trans_b_, M, N, K, static_cast<C>(alpha_), av.data(), lda, bv.data(), ldb, beta, out, N);
          } else {
            gemm_int<C>(trans_a_, trans_b_, M, N, K, av.data(), lda, bv.data(), ldb, out, N);
            const C* c = has_c ? ctx.input(2).data<C>() : nullptr;
            for (int64_t i = 0; i < M; ++i) {
              for (int64_t j = 0; j < N; ++j) {
                double v = static_cast<double>(alpha_) * static_cast<double>(out[i * N + j]);
                if (c) v += static_cast<double>(beta_) *
                            static_cast<double>(c[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)]);
                out[i * N + j] = static_cast<C>(v);
              }
            }
          }
          yo.commit();
          return Status::ok();
        },
        "Gemm");
  }

 private:
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
};

const backend::KernelRegistrar kMatMul({"MatMul", "", 1, backend::kAnyOpset, backend::kernel_factory<MatMulKernel>()});
const backend::KernelRegistrar kGemm({"Gemm", "", 1, backend::kAnyOpset, backend::kernel_factory<GemmKernel>()});

}  // namespace
}  // namespace sdx::cpu
