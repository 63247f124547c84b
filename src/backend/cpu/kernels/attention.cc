// Attention (ONNX opsets 23, 24, 25): scaled dot-product attention with 3-D or 4-D
// inputs, grouped KV heads, boolean or additive masks, causal and sliding-window
// masking (bottom-right aligned), a KV cache (past/present), per-batch valid KV
// lengths (nonpad_kv_seqlen), softcap and the optional qk_matmul_output.
//
// The computation follows onnx/reference/ops/op_attention.py: each query row gets an
// additive bias row (mask + causal + window + padding); a row whose bias is entirely
// -inf yields zero probabilities (and so a zero output row). 16-bit inputs
// compute in float, rounding through the input type at the points where the
// reference keeps them in that type, so results agree within fp16/bf16 tolerance.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {


struct AttnDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_new = 0, past = 0, kv_len = 0;
  int64_t qk_head = 0, v_head = 0;
  bool three_d = false;
};

class AttentionKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    is_causal_ = node.attr_int("is_causal", 0) != 0;
    q_num_heads_ = node.attr_int("q_num_heads", 0);
    kv_num_heads_ = node.attr_int("kv_num_heads", 0);
    scale_ = node.attr_float("scale", 0.0f);
    has_scale_ = node.attr("scale") != nullptr;
    softcap_ = node.attr_float("softcap", 0.0f);
    qk_mode_ = node.attr_int("qk_matmul_output_mode", 0);
    softmax_precision_ = node.attr_int("softmax_precision", 0);
    left_window_ = node.attr_int("left_window_size", -1);
    right_window_ = node.attr_int("right_window_size", -1);
    if (qk_mode_ < 0 || qk_mode_ > 3)
      return invalid_argument("qk_matmul_output_mode must be 0..3, got " + std::to_string(qk_mode_));
    if (left_window_ < -1 || right_window_ < -1)
      return invalid_argument("left_window_size/right_window_size must be -1 or nonnegative");
    if (q_num_heads_ < 0 || kv_num_heads_ < 0) return invalid_argument("q_num_heads/kv_num_heads must be positive");
    if (softcap_ < 0) return invalid_argument("softcap must be nonnegative");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& q = ctx.input(0);
    return dispatch<SDX_FLOAT_TYPES>(q.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      return compute<T>(ctx);
    }, "Attention");
  }

 private:
  Status shapes(const backend::KernelContext& ctx, AttnDims* d) const {
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
      return invalid_argument("Q, K and V must share one element type");
    if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4))
      return invalid_argument("Q, K, V must all be rank 3 or all rank 4; got Q" + q.shape().to_string() + " K" +
                              k.shape().to_string() + " V" + v.shape().to_string());
    d->batch = q.shape()[0];
    if (k.shape()[0] != d->batch || v.shape()[0] != d->batch) return invalid_argument("Q, K, V batch sizes differ");
    if (q.rank() == 3) {
      d->three_d = true;
      if (q_num_heads_ <= 0 || kv_num_heads_ <= 0)
        return invalid_argument("3-D inputs need positive q_num_heads and kv_num_heads attributes");
      d->q_heads = q_num_heads_;
      d->kv_heads = kv_num_heads_;
      if (q.shape()[2] % d->q_heads || k.shape()[2] % d->kv_heads || v.shape()[2] % d->kv_heads)
        return invalid_argument("hidden sizes of Q" + q.shape().to_string() + ", K" + k.shape().to_string() + ", V" +
                                v.shape().to_string() + " are not divisible by the head counts");
      d->q_len = q.shape()[1];
      d->kv_new = k.shape()[1];
      d->qk_head = q.shape()[2] / d->q_heads;
      if (k.shape()[2] / d->kv_heads != d->qk_head) return invalid_argument("Q and K head sizes differ");
      d->v_head = v.shape()[2] / d->kv_heads;
      if (v.shape()[1] != d->kv_new) return invalid_argument("K and V sequence lengths differ");
    } else {
      d->q_heads = q.shape()[1];
      d->kv_heads = k.shape()[1];
      if (v.shape()[1] != d->kv_heads) return invalid_argument("K and V head counts differ");
      d->q_len = q.shape()[2];
      d->kv_new = k.shape()[2];
      if (v.shape()[2] != d->kv_new) return invalid_argument("K and V sequence lengths differ");
      d->qk_head = q.shape()[3];
      if (k.shape()[3] != d->qk_head) return invalid_argument("Q and K head sizes differ");
      d->v_head = v.shape()[3];
    }
    if (d->kv_heads == 0 || d->q_heads % d->kv_heads != 0)
      return invalid_argument("q heads (" + std::to_string(d->q_heads) + ") must be a multiple of kv heads (" +
                              std::to_string(d->kv_heads) + ")");
    const bool has_pk = ctx.has_input(4), has_pv = ctx.has_input(5);
    if (has_pk != has_pv) return invalid_argument("past_key and past_value must be given together");
    if (has_pk) {
      const Tensor& pk = ctx.input(4);
      const Tensor& pv = ctx.input(5);
      if (pk.rank() != 4 || pv.rank() != 4 || pk.shape()[0] != d->batch || pk.shape()[1] != d->kv_heads ||
          pk.shape()[3] != d->qk_head || pv.shape()[0] != d->batch || pv.shape()[1] != d->kv_heads ||
          pv.shape()[3] != d->v_head || pv.shape()[2] != pk.shape()[2])
        return invalid_argument("past_key" + pk.shape().to_string() + "/past_value" + pv.shape().to_string() +
                                " do not match (batch, kv_heads, past_len, head_size)");
      if (pk.dtype() != q.dtype() || pv.dtype() != q.dtype()) return invalid_argument("past_key/past_value type differs from K");
      d->past = pk.shape()[2];
    }
    d->kv_len = d->past + d->kv_new;
    return Status::ok();
  }

  // The additive bias of one query row: attn_mask (bool -> 0/-inf, or additive,
  // broadcast right-aligned over [B, Hq, Sq, Lm] and -inf past its last dim), plus -inf
  // where causal, sliding-window or nonpad_kv_seqlen rules disallow a key.
  template <typename C>
  struct Bias {
    std::vector<C> mask;  // attn_mask widened to C
    int64_t stride[4] = {0, 0, 0, 0};
    int64_t mask_len = 0, past = 0, q_len = 0, kv_len = 0;
    bool has_mask = false, causal = false;
    int64_t left = -1, right = -1;
    std::vector<int64_t> nonpad;  // empty when not given

    // Fills out[0..kv_len) for query i of (b, h); false when every key is disallowed.
    bool row(int64_t b, int64_t h, int64_t i, C* out) const {
      const C neg_inf = -std::numeric_limits<C>::infinity();
      const int64_t valid = nonpad.empty() ? kv_len : nonpad[static_cast<size_t>(b)];
      const int64_t offset = nonpad.empty() ? past : valid - q_len;
      const C* mrow = has_mask ? mask.data() + b * stride[0] + h * stride[1] + i * stride[2] : nullptr;
      bool any = false;
      for (int64_t j = 0; j < kv_len; ++j) {
        C v = mrow ? (j < mask_len ? mrow[j * stride[3]] : neg_inf) : C(0);
        const int64_t diff = i + offset - j;
        const bool allowed = !(causal && diff < 0) && !(left >= 0 && diff > left) && !(right >= 0 && -diff > right) && j < valid;
        if (!allowed) v = neg_inf;
        out[j] = v;
        if (!(std::isinf(v) && v < 0)) any = true;
      }
      return any;
    }
  };

  template <typename C>
  Status prepare_bias(const backend::KernelContext& ctx, const AttnDims& d, Bias<C>* bias) const {
    const int64_t L = d.kv_len, Sq = d.q_len;
    bias->past = d.past, bias->q_len = Sq, bias->kv_len = L;
    bias->causal = is_causal_, bias->left = left_window_, bias->right = right_window_;
    if (ctx.has_input(6)) {
      if (ctx.has_input(4)) return invalid_argument("nonpad_kv_seqlen cannot be combined with past_key/past_value");
      const Tensor& np = ctx.input(6);
      Result<std::vector<int64_t>> nonpad = read_int64s(np, "nonpad_kv_seqlen", IntTypes::kInt32Or64);
      if (!nonpad.is_ok() || np.numel() != d.batch)
        return invalid_argument("nonpad_kv_seqlen must be an integer tensor of shape [batch]");
      bias->nonpad = std::move(nonpad).value();
      for (int64_t n : bias->nonpad)
        if (n < 0 || n > L) return invalid_argument("nonpad_kv_seqlen value " + std::to_string(n) + " outside [0, " + std::to_string(L) + "]");
    }
    if (!ctx.has_input(3)) return Status::ok();
    const Tensor& m = ctx.input(3);
    if (m.rank() < 1 || m.rank() > 4) return invalid_argument("attn_mask must have rank 1..4, got " + m.shape().to_string());
    bias->has_mask = true;
    bias->mask_len = m.shape()[m.rank() - 1];
    if (bias->mask_len > L)
      return invalid_argument("attn_mask last dim " + std::to_string(bias->mask_len) + " exceeds total kv length " + std::to_string(L));
    const int64_t target[4] = {d.batch, d.q_heads, Sq, bias->mask_len};
    int64_t stride = 1;
    for (int k = 3; k >= 0 && m.rank() - 4 + k >= 0; --k) {
      const int64_t dim = m.shape()[m.rank() - 4 + k];
      if (dim != target[k] && dim != 1)
        return invalid_argument("attn_mask" + m.shape().to_string() + " does not broadcast to [" + std::to_string(d.batch) + ", " +
                                std::to_string(d.q_heads) + ", " + std::to_string(Sq) + ", " + std::to_string(bias->mask_len) + "]");
      bias->stride[k] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
    bias->mask.resize(static_cast<size_t>(m.numel()));
    if (m.dtype() == DType::kBool) {
      for (int64_t i = 0; i < m.numel(); ++i)
        bias->mask[static_cast<size_t>(i)] = m.data<bool>()[i] ? C(0) : -std::numeric_limits<C>::infinity();
      return Status::ok();
    }
    if (m.dtype() != ctx.input(0).dtype()) return invalid_argument("attn_mask must be bool or the type of Q");
    return dispatch<SDX_FLOAT_TYPES>(m.dtype(), [&](auto tag) -> Status {
      using M = typename decltype(tag)::type;
      for (int64_t i = 0; i < m.numel(); ++i) bias->mask[static_cast<size_t>(i)] = load_as<C>(m.data<M>()[i]);
      return Status::ok();
    }, "attn_mask");
  }

  // Turns one row of raw scores into probabilities in place: softcap, add the bias,
  // stable softmax; a fully masked row becomes zeros. Fills the qk_matmul_output row
  // for the configured mode when qk_row is given.
  template <typename T, typename C>
  void softmax_row(C* row, const C* brow, int64_t L, bool masked, T* qk_row) const {
    // softmax_precision naming float or double means no rounding through T.
    const bool wide = softmax_precision_ == 1 || softmax_precision_ == 11;
    C mx = -std::numeric_limits<C>::infinity();
    for (int64_t j = 0; j < L; ++j) {
      C acc = round_as<T, C>(row[j]);
      if (softcap_ > 0) acc = round_as<T, C>(static_cast<C>(softcap_) * std::tanh(acc / static_cast<C>(softcap_)));
      if (qk_row && qk_mode_ <= 1) qk_row[j] = store_as<T, C>(acc);
      acc = round_as<T, C>(acc + brow[j]);
      if (qk_row && qk_mode_ == 2) qk_row[j] = store_as<T, C>(acc);
      row[j] = acc;
      if (acc > mx) mx = acc;
    }
    const C safe_max = std::isinf(mx) && mx < 0 ? C(0) : mx;
    C sum = 0;
    for (int64_t j = 0; j < L; ++j) {
      const C e = wide ? std::exp(row[j] - safe_max) : round_as<T, C>(std::exp(round_as<T, C>(row[j] - safe_max)));
      row[j] = e;
      sum += e;
    }
    if (!wide) sum = round_as<T, C>(sum);
    if (sum == C(0)) sum = C(1);
    for (int64_t j = 0; j < L; ++j) {
      row[j] = masked ? C(0) : round_as<T, C>(row[j] / sum);
      if (qk_row && qk_mode_ == 3) qk_row[j] = store_as<T, C>(row[j]);
    }
  }

  template <typename T>
  Status compute(backend::KernelContext& ctx) const {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    AttnDims d;
    SDX_RETURN_IF_ERROR(shapes(ctx, &d), "");
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    const int64_t B = d.batch, Hq = d.q_heads, Hk = d.kv_heads, Sq = d.q_len, L = d.kv_len, Dq = d.qk_head, Dv = d.v_head;
    const int64_t group = Hq / Hk;

    // Present K/V in [B, Hk, L, D] (input type), also the source of the scaled copies.
    SDX_ASSIGN_OR_RETURN(Tensor pk, seq::output_or_scratch(ctx, 1, q.dtype(), Shape{B, Hk, L, Dq}), "present_key");
    SDX_ASSIGN_OR_RETURN(Tensor pv, seq::output_or_scratch(ctx, 2, q.dtype(), Shape{B, Hk, L, Dv}), "present_value");
    T* pkd = pk.data<T>();
    T* pvd = pv.data<T>();
    auto fill_present = [&](T* dst, const Tensor& past, const Tensor& cur, int64_t D) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hk; ++h) {
          T* out = dst + (b * Hk + h) * L * D;
          if (d.past > 0) std::copy_n(past.data<T>() + (b * Hk + h) * d.past * D, d.past * D, out);
          out += d.past * D;
          for (int64_t s = 0; s < d.kv_new; ++s) {
            const int64_t src = d.three_d ? (b * d.kv_new + s) * Hk * D + h * D : ((b * Hk + h) * d.kv_new + s) * D;
            std::copy_n(cur.data<T>() + src, D, out + s * D);
          }
        }
    };
    const Tensor empty;
    fill_present(pkd, d.past > 0 ? ctx.input(4) : empty, k, Dq);
    fill_present(pvd, d.past > 0 ? ctx.input(5) : empty, v, Dv);

    // Scale split as sqrt(scale) on both Q and K, rounded through T like the reference.
    const C scale = has_scale_ ? static_cast<C>(scale_) : C(1) / std::sqrt(static_cast<C>(Dq));
    const C sqrt_scale = round_as<T, C>(std::sqrt(scale));
    std::vector<C> qs(static_cast<size_t>(B * Hq * Sq * Dq)), ks(static_cast<size_t>(B * Hk * L * Dq)), vs(static_cast<size_t>(B * Hk * L * Dv));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t s = 0; s < Sq; ++s) {
          const int64_t src = d.three_d ? (b * Sq + s) * Hq * Dq + h * Dq : ((b * Hq + h) * Sq + s) * Dq;
          C* dst = qs.data() + ((b * Hq + h) * Sq + s) * Dq;
          for (int64_t e = 0; e < Dq; ++e) dst[e] = round_as<T, C>(load_as<C>(q.data<T>()[src + e]) * sqrt_scale);
        }
    for (int64_t i = 0; i < B * Hk * L * Dq; ++i) ks[static_cast<size_t>(i)] = round_as<T, C>(load_as<C>(pkd[i]) * sqrt_scale);
    for (int64_t i = 0; i < B * Hk * L * Dv; ++i) vs[static_cast<size_t>(i)] = load_as<C>(pvd[i]);

    Bias<C> bias;
    SDX_RETURN_IF_ERROR(prepare_bias<C>(ctx, d, &bias), "");

    const Shape y_shape = d.three_d ? Shape{B, Sq, Hq * Dv} : Shape{B, Hq, Sq, Dv};
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, q.dtype(), y_shape), "Y");
    const bool want_qk = ctx.num_outputs() > 3 && ctx.wants_output(3);
    Tensor qk_out;
    if (want_qk) {
      SDX_ASSIGN_OR_RETURN(qk_out, ctx.allocate_output(3, q.dtype(), Shape{B, Hq, Sq, L}), "qk_matmul_output");
    }
    // Per (batch, kv head): the group of query heads sharing it is contiguous in qs,
    // so scores = Qgroup [G*Sq, Dq] x K^T and Y = P [G*Sq, L] x V are two GEMMs.
    const int64_t rows = group * Sq;
    std::vector<C> scores(static_cast<size_t>(rows * L)), out(static_cast<size_t>(rows * Dv)), brow(static_cast<size_t>(L));
    T* yd = y.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t kvh = 0; kvh < Hk; ++kvh) {
        const C* kb = ks.data() + (b * Hk + kvh) * L * Dq;
        const C* vb = vs.data() + (b * Hk + kvh) * L * Dv;
        const int64_t h0 = kvh * group;
        gemm(false, true, rows, L, Dq, C(1), qs.data() + (b * Hq + h0) * Sq * Dq, Dq, kb, Dq, C(0), scores.data(), L);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t h = h0 + r / Sq, i = r % Sq;
          T* qk_row = want_qk ? qk_out.data<T>() + ((b * Hq + h) * Sq + i) * L : nullptr;
          const bool masked = !bias.row(b, h, i, brow.data());
          softmax_row<T, C>(scores.data() + r * L, brow.data(), L, masked, qk_row);
        }
        gemm(false, false, rows, Dv, L, C(1), scores.data(), L, vb, Dv, C(0), out.data(), Dv);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t h = h0 + r / Sq, i = r % Sq;
          T* yi = d.three_d ? yd + (b * Sq + i) * Hq * Dv + h * Dv : yd + ((b * Hq + h) * Sq + i) * Dv;
          for (int64_t e = 0; e < Dv; ++e) yi[e] = store_as<T, C>(out[static_cast<size_t>(r * Dv + e)]);
        }
      }
    return Status::ok();
  }

  bool is_causal_ = false;
  int64_t q_num_heads_ = 0, kv_num_heads_ = 0;
  float scale_ = 0.0f;
  bool has_scale_ = false;
  float softcap_ = 0.0f;
  int64_t qk_mode_ = 0, softmax_precision_ = 0, left_window_ = -1, right_window_ = -1;
};

const backend::KernelRegistrar kAttention({"Attention", "", 23, backend::kAnyOpset, backend::kernel_factory<AttentionKernel>()});

}  // namespace
}  // namespace sdx::cpu
