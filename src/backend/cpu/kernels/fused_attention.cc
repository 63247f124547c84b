// sdx.Attention (schema and semantics in ir/schemas/fused_attention.cc): scaled dot-product attention
// over [B, H, S, D] inputs with an optional bool or additive mask and causal masking, float32/float64.
//
// The softmax is streamed (see backend/cpu/kernels/fused_attention.h): per (batch, head) and block of query rows,
// key blocks are folded into a running row maximum m and row sum l, FlashAttention-style:
//   s = scale * Q_blk . K_blk^T (+ mask)          one GEMM into a [block_q, block_kv] scratch (dot_rows
//                                                  for a lone float query row: a decode step)
//   m' = max(m, rowmax(s)); p = exp(s - m')        (m' = -inf is treated as 0, so -inf scores give p = 0)
//   l = l * exp(m - m') + rowsum(p);  Y_rows *= exp(m - m');  Y_rows += p . V_blk   (second GEMM)
// and finally Y_rows /= l. The output rows are the accumulator, so scratch is one score block, the row
// statistics and the GEMM workspace: independent of S_q and S_kv. Key blocks entirely past the causal
// limit of a query block are skipped.
//
// Agreement with the unfused MatMul / Softmax / MatMul graph: exp within an ulp or so of it (simd::exp for
// float, std::exp for double), row sums in double; the online rescaling and the scale applied to Q (the GEMM's alpha) differ from it only by
// rounding (about 1e-7 relative). A row whose scores are all -inf yields l = 0 and so NaN, as Softmax does.
//
// Threads: the (batch, head, query block) tasks are split over the session's pool, one scratch per thread.
// Bound form: prepare() allocates the scratches once; replay runs the same compute() with no allocation.
#include "backend/cpu/kernels/fused_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels/util/attention_fold.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/dot_rows.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "backend/cpu/simd/vector_ops.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using attention::MaskKind;

// Sizes and element strides of one call. Strides of broadcast dims are 0.
struct AttnShape {
  int64_t batch = 0, heads = 0, s_q = 0, s_kv = 0, d = 0, dv = 0;
  int64_t k_sb = 0, k_sh = 0, v_sb = 0, v_sh = 0;  // K and V [B|1, H|1, S_kv, *]
  attention::MaskLayout mask;  // the mask broadcast to the scores
};

int64_t block_q(const AttnShape& s) { return std::min(s.s_q, kAttentionBlockQ); }
int64_t block_kv(const AttnShape& s) { return std::min(s.s_kv, kAttentionBlockKv); }
int64_t workspace_elements(int64_t d, int64_t dv, int64_t bkv) {
  return std::max(gemm_workspace_size(bkv, d), gemm_workspace_size(dv, bkv));
}

// Scratch of one call, allocated once per bound call (or per run() call).
template <typename T>
struct Scratch {
  explicit Scratch(const AttnShape& s)
      : scores(static_cast<size_t>(block_q(s) * block_kv(s))),
        row_max(static_cast<size_t>(block_q(s))),
        row_sum(static_cast<size_t>(block_q(s))),
        workspace(static_cast<size_t>(workspace_elements(s.d, s.dv, block_kv(s)))) {}
  ScratchBuffer<T> scores;
  ScratchBuffer<T> row_max;
  ScratchBuffer<double> row_sum;
  ScratchBuffer<T> workspace;
};

struct Params {
  double scale = 1.0;
  bool causal = false;
  double mask_value = -std::numeric_limits<double>::infinity();
};

// One task: query rows [i0, i0 + block_q) of head h of batch b, with its own scratch.
template <typename T>
void compute_block(const AttnShape& s, const Params& p, const T* q, const T* k, const T* v, const void* mask, T* y,
                   const Scratch<T>& scratch, int64_t b, int64_t h, int64_t i0) {
  const T scale = static_cast<T>(p.scale);
  const T mask_value = static_cast<T>(p.mask_value);
  const int64_t offset = s.s_kv - s.s_q;  // causal: row i sees keys j <= i + offset
  const int64_t bq = block_q(s), bkv = block_kv(s);
  T* const mx = scratch.row_max.data();
  double* const sum = scratch.row_sum.data();
  const bool* mask_b = s.mask.kind == MaskKind::kBool ? static_cast<const bool*>(mask) : nullptr;
  const T* mask_a = s.mask.kind == MaskKind::kAdditive ? static_cast<const T*>(mask) : nullptr;

  const T* qh = q + (b * s.heads + h) * s.s_q * s.d;
  const T* kh = k + b * s.k_sb + h * s.k_sh;
  const T* vh = v + b * s.v_sb + h * s.v_sh;
  T* yh = y + (b * s.heads + h) * s.s_q * s.dv;
  const int64_t mask_bh = b * s.mask.sb + h * s.mask.sh;
  const int64_t mq = std::min(bq, s.s_q - i0);
  T* yrows = yh + i0 * s.dv;
  attention::begin_rows(yrows, mq, s.dv, mx, sum);
  // Keys any row of this block may see.
  const int64_t kv_end = p.causal ? std::clamp<int64_t>(i0 + mq + offset, 0, s.s_kv) : s.s_kv;
  for (int64_t j0 = 0; j0 < kv_end; j0 += bkv) {
    const int64_t nk = std::min(bkv, kv_end - j0);
    auto prepare = [&](int64_t r, T* row) -> int64_t {
      const int64_t i = i0 + r;
      // Keys [0, visible) of this block are inside the causal limit.
      const int64_t visible = p.causal ? std::clamp<int64_t>(i + offset + 1 - j0, 0, nk) : nk;
      if (mask_b) {
        const bool* m = mask_b + mask_bh + i * s.mask.sq + j0 * s.mask.sk;
        for (int64_t j = 0; j < visible; ++j)
          if (!m[j * s.mask.sk]) row[j] = mask_value;
      } else if (mask_a) {
        const T* m = mask_a + mask_bh + i * s.mask.sq + j0 * s.mask.sk;
        if constexpr (std::is_same_v<T, float>) {
          // Vectorized where the mask row is contiguous or one value (BERT's [B, 1, 1, S_kv] padding mask).
          if (s.mask.sk == 1) simd::binary_vv(simd::BinaryOp::kAdd, row, m, row, visible);
          else if (s.mask.sk == 0) simd::binary_vs(simd::BinaryOp::kAdd, row, m[0], row, visible);
          else
            for (int64_t j = 0; j < visible; ++j) row[j] += m[j * s.mask.sk];
        } else {
          for (int64_t j = 0; j < visible; ++j) row[j] += m[j * s.mask.sk];
        }
      }
      return visible;
    };
    attention::fold_chunk(qh + i0 * s.d, mq, s.d, s.dv, kh + j0 * s.d, vh + j0 * s.dv, nk, scale, prepare,
                          scratch.scores.data(), mx, sum, scratch.workspace.data(), yrows);
  }
  // A causal row that sees no key stays zero.
  attention::finish_rows(yrows, mq, s.dv, sum, [&](int64_t r) { return p.causal && i0 + r + offset < 0; });
}

// Scratch for each of up to `units` concurrent tasks.
template <typename T>
struct Scratches {
  Scratches(const AttnShape& s, int64_t units) {
    for (int64_t u = 0; u < units; ++u) per_unit.push_back(std::make_unique<Scratch<T>>(s));
  }
  std::vector<std::unique_ptr<Scratch<T>>> per_unit;
};

// Tasks (batch, head, block of query rows) are independent and each is computed by one thread in a
// fixed order, so the result does not depend on the thread count. They are cut into as many units as
// there are scratches (one per pool thread, fixed when the scratch was made); a unit runs its tasks in
// order on one thread with its own scratch.
template <typename T>
void compute(const AttnShape& s, const Params& p, const T* q, const T* k, const T* v, const void* mask, T* y,
             const Scratches<T>& scratch) {
  const int64_t q_blocks = (s.s_q + block_q(s) - 1) / block_q(s);
  const int64_t tasks = s.batch * s.heads * q_blocks;
  const int64_t units = std::min<int64_t>(static_cast<int64_t>(scratch.per_unit.size()), tasks);
  // Below ~ 32K multiply-adds in all (a decode step's 4 heads x 128 keys x 64) the split costs more
  // than it saves.
  const bool split = units > 1 && tasks * s.s_kv * s.d * std::min(s.s_q, block_q(s)) >= 32 * 1024;
  parallel_for(split ? units : 1, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t t0 = tasks * u / (split ? units : 1), t1 = tasks * (u + 1) / (split ? units : 1);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t bh = t / q_blocks;
        compute_block<T>(s, p, q, k, v, mask, y, *scratch.per_unit[static_cast<size_t>(u)], bh / s.heads,
                         bh % s.heads, (t % q_blocks) * block_q(s));
      }
    }
  });
}

class FusedAttentionKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    has_scale_ = node.attr("scale") != nullptr;
    params_.scale = node.attr_float("scale", 1.0f);
    params_.causal = node.attr_int("causal", 0) != 0;
    params_.mask_value = node.attr_float("mask_value", -std::numeric_limits<float>::infinity());
    if (node.attr_int("causal", 0) != 0 && node.attr_int("causal", 0) != 1)
      return invalid_argument("sdx.Attention attribute 'causal' must be 0 or 1");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor* mask = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    SDX_ASSIGN_OR_RETURN(AttnShape s, shape_of(ctx.input(0), ctx.input(1), ctx.input(2), mask), ctx.where());
    const Tensor& q = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, q.dtype(), Shape{s.batch, s.heads, s.s_q, s.dv}),
                         "sdx.Attention");
    if (y.numel() == 0) return Status::ok();
    const Params p = params_for(s);
    return dispatch<float, double>(
        q.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          Scratches<T> scratch(s, current_num_threads());
          compute<T>(s, p, q.data<T>(), ctx.input(1).data<T>(), ctx.input(2).data<T>(),
                     mask ? mask->raw_data() : nullptr, y.data<T>(), scratch);
          return Status::ok();
        },
        "sdx.Attention");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) return no_bound_form();
    const Tensor* mask = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const Tensor& q = ctx.input(0);
    Result<AttnShape> shape = shape_of(q, ctx.input(1), ctx.input(2), mask);
    if (!shape.is_ok()) return no_bound_form();
    const AttnShape s = shape.value();
    if (!output_matches(ctx, 0, q.dtype(), Shape{s.batch, s.heads, s.s_q, s.dv})) return no_bound_form();
    if (ctx.output(0).numel() == 0) return backend::bind_call([] { return Status::ok(); });
    const Params p = params_for(s);
    const void* pm = mask ? mask->raw_data() : nullptr;
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<float, double>(
        q.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          bound = backend::bind_call([s, p, pq = q.data<T>(), pk = ctx.input(1).data<T>(), pv = ctx.input(2).data<T>(),
                                      pm, py = ctx.output(0).data<T>(), scratch = std::make_unique<Scratches<T>>(s, current_num_threads())] {
            compute<T>(s, p, pq, pk, pv, pm, py, *scratch);
            return Status::ok();
          });
          return Status::ok();
        },
        "sdx.Attention");
    return bound;
  }

 private:
  Params params_for(const AttnShape& s) const {
    Params p = params_;
    if (!has_scale_) p.scale = 1.0 / std::sqrt(static_cast<double>(s.d));
    return p;
  }

  static Result<AttnShape> shape_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask) {
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
      return invalid_argument("sdx.Attention needs 4-D Q, K, V ([batch, heads, seq, head_dim]); got Q" +
                              q.shape().to_string() + " K" + k.shape().to_string() + " V" + v.shape().to_string());
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
      return invalid_argument("sdx.Attention: Q, K and V must share one element type");
    AttnShape s;
    s.batch = q.shape()[0];
    s.heads = q.shape()[1];
    s.s_q = q.shape()[2];
    s.d = q.shape()[3];
    s.s_kv = k.shape()[2];
    s.dv = v.shape()[3];
    auto fits = [](int64_t dim, int64_t full) { return dim == full || dim == 1; };
    if (!fits(k.shape()[0], s.batch) || !fits(k.shape()[1], s.heads) || !fits(v.shape()[0], s.batch) ||
        !fits(v.shape()[1], s.heads) || k.shape()[3] != s.d || v.shape()[2] != s.s_kv)
      return invalid_argument("sdx.Attention: shapes do not match: Q" + q.shape().to_string() + " K" +
                              k.shape().to_string() + " V" + v.shape().to_string());
    s.k_sh = k.shape()[1] == 1 ? 0 : s.s_kv * s.d;
    s.k_sb = k.shape()[0] == 1 ? 0 : k.shape()[1] * s.s_kv * s.d;
    s.v_sh = v.shape()[1] == 1 ? 0 : s.s_kv * s.dv;
    s.v_sb = v.shape()[0] == 1 ? 0 : v.shape()[1] * s.s_kv * s.dv;
    if (mask) {
      const int64_t full[4] = {s.batch, s.heads, s.s_q, s.s_kv};
      SDX_ASSIGN_OR_RETURN(s.mask, attention::mask_layout(*mask, q.dtype(), full, "sdx.Attention"), "");
    }
    return s;
  }

  Params params_;
  bool has_scale_ = false;
};

const backend::KernelRegistrar kFusedAttention({"Attention", "sdx", 1, backend::kAnyOpset,
                                                backend::kernel_factory<FusedAttentionKernel>()});

}  // namespace

int64_t fused_attention_scratch_bytes(int64_t elem_size, int64_t s_q, int64_t s_kv, int64_t d, int64_t dv) {
  AttnShape s;
  s.s_q = s_q;
  s.s_kv = s_kv;
  s.d = d;
  s.dv = dv;
  const int64_t bq = block_q(s), bkv = block_kv(s);
  return elem_size * (bq * bkv + bq + workspace_elements(d, dv, bkv)) + static_cast<int64_t>(sizeof(double)) * bq;
}

}  // namespace sdx::cpu
