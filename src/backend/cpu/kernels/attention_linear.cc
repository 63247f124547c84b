// LinearAttention (ONNX opset 27): recurrent linear attention over a per-head state
// matrix S (d_k x d_v), with four update rules:
//   linear:      S = S + k v^T
//   gated:       S = exp(g) S + k v^T
//   delta:       S = S + k (beta (v - S^T k))^T
//   gated_delta: S = exp(g) S, then the delta rule
// and o_t = scale * q_t^T S_t. Inputs are packed [B, T, H*D]; query heads share KV
// heads in groups (GQA). Computed in float (or double for double inputs) token by
// token, which is what the reference does; chunk_size is only a tuning hint.
#include <cmath>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {


class LinearAttentionKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const std::string rule = node.attr_string("update_rule", "gated_delta");
    if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
      return invalid_argument("update_rule must be linear, gated, delta or gated_delta; got '" + rule + "'");
    gating_ = rule == "gated" || rule == "gated_delta";
    delta_ = rule == "delta" || rule == "gated_delta";
    q_heads_ = node.attr_int("q_num_heads", 0);
    kv_heads_ = node.attr_int("kv_num_heads", 0);
    scale_ = node.attr_float("scale", 0.0f);
    if (q_heads_ <= 0 || kv_heads_ <= 0 || q_heads_ % kv_heads_ != 0)
      return invalid_argument("q_num_heads (" + std::to_string(q_heads_) + ") must be a positive multiple of kv_num_heads (" +
                              std::to_string(kv_heads_) + ")");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    return dispatch<SDX_FLOAT_TYPES>(ctx.input(0).dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      return compute<T>(ctx);
    }, "LinearAttention");
  }

 private:
  template <typename T>
  Status compute(backend::KernelContext& ctx) const {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3) return invalid_argument("query, key and value must be rank 3 [B, T, H*D]");
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) return invalid_argument("query, key and value must share one element type");
    const int64_t B = q.shape()[0], Tn = q.shape()[1], Hq = q_heads_, Hk = kv_heads_, G = Hq / Hk;
    if (q.shape()[2] % Hq || k.shape()[2] % Hk || v.shape()[2] % Hk)
      return invalid_argument("hidden sizes are not divisible by the head counts");
    const int64_t dk = q.shape()[2] / Hq, dv = v.shape()[2] / Hk;
    if (k.shape()[2] / Hk != dk || k.shape()[0] != B || v.shape()[0] != B || k.shape()[1] != Tn || v.shape()[1] != Tn)
      return invalid_argument("key" + k.shape().to_string() + "/value" + v.shape().to_string() + " do not match query" + q.shape().to_string());
    if (gating_ != ctx.has_input(4)) return invalid_argument(gating_ ? "this update_rule requires decay" : "this update_rule forbids decay");
    if (delta_ != ctx.has_input(5)) return invalid_argument(delta_ ? "this update_rule requires beta" : "this update_rule forbids beta");
    int64_t decay_w = 0, beta_w = 0;
    std::vector<C> decay, beta;
    if (gating_) {
      const Tensor& g = ctx.input(4);
      if (g.dtype() != q.dtype() || g.rank() != 3 || g.shape()[0] != B || g.shape()[1] != Tn ||
          (g.shape()[2] != Hk && g.shape()[2] != Hk * dk))
        return invalid_argument("decay must be [B, T, kv_heads] or [B, T, kv_heads*d_k], got " + g.shape().to_string());
      decay_w = g.shape()[2] / Hk;  // 1 or d_k
      decay = seq::widen<T, C>(g);
    }
    if (delta_) {
      const Tensor& bt = ctx.input(5);
      if (bt.dtype() != q.dtype() || bt.rank() != 3 || bt.shape()[0] != B || bt.shape()[1] != Tn ||
          (bt.shape()[2] != Hk && bt.shape()[2] != 1))
        return invalid_argument("beta must be [B, T, kv_heads] or [B, T, 1], got " + bt.shape().to_string());
      beta_w = bt.shape()[2];
      beta = seq::widen<T, C>(bt);
    }
    const Shape state_shape{B, Hk, dk, dv};
    std::vector<C> state(static_cast<size_t>(B * Hk * dk * dv), C(0));
    DType state_type = q.dtype();
    if (ctx.has_input(3)) {
      const Tensor& ps = ctx.input(3);
      if (ps.shape() != state_shape) return invalid_argument("past_state" + ps.shape().to_string() + " must be " + state_shape.to_string());
      state_type = ps.dtype();
      SDX_RETURN_IF_ERROR((dispatch<SDX_FLOAT_TYPES>(ps.dtype(), [&](auto tag) -> Status {
        using S = typename decltype(tag)::type;
        state = seq::widen<S, C>(ps);
        return Status::ok();
      }, "past_state")), "");
    }
    const C scale = scale_ != 0.0f ? static_cast<C>(scale_) : C(1) / std::sqrt(static_cast<C>(dk));
    SDX_ASSIGN_OR_RETURN(Tensor out, ctx.allocate_output(0, q.dtype(), Shape{B, Tn, Hq * dv}), "output");
    const std::vector<C> qv = seq::widen<T, C>(q), kv = seq::widen<T, C>(k), vv = seq::widen<T, C>(v);
    std::vector<C> vt(static_cast<size_t>(dv));
    T* od = out.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hk; ++h) {
        C* S = state.data() + (b * Hk + h) * dk * dv;
        for (int64_t t = 0; t < Tn; ++t) {
          const int64_t bt = b * Tn + t;
          const C* kt = kv.data() + bt * Hk * dk + h * dk;
          const C* vsrc = vv.data() + bt * Hk * dv + h * dv;
          if (gating_)
            for (int64_t i = 0; i < dk; ++i) {
              const C g = std::exp(decay[static_cast<size_t>(bt * Hk * decay_w + h * decay_w + (decay_w == 1 ? 0 : i))]);
              for (int64_t m = 0; m < dv; ++m) S[i * dv + m] *= g;
            }
          for (int64_t m = 0; m < dv; ++m) vt[static_cast<size_t>(m)] = vsrc[m];
          if (delta_) {
            const C bb = beta[static_cast<size_t>(bt * beta_w + (beta_w == 1 ? 0 : h))];
            for (int64_t m = 0; m < dv; ++m) {
              C r = 0;
              for (int64_t i = 0; i < dk; ++i) r += S[i * dv + m] * kt[i];
              vt[static_cast<size_t>(m)] = bb * (vt[static_cast<size_t>(m)] - r);
            }
          }
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t m = 0; m < dv; ++m) S[i * dv + m] += kt[i] * vt[static_cast<size_t>(m)];
          for (int64_t hq = h * G; hq < (h + 1) * G; ++hq) {
            const C* qt = qv.data() + bt * Hq * dk + hq * dk;
            T* o = od + bt * Hq * dv + hq * dv;
            for (int64_t m = 0; m < dv; ++m) {
              C acc = 0;
              for (int64_t i = 0; i < dk; ++i) acc += qt[i] * S[i * dv + m];
              o[m] = store_as<T, C>(scale * acc);
            }
          }
        }
      }
    SDX_ASSIGN_OR_RETURN(Tensor present, ctx.allocate_output(1, state_type, state_shape), "present_state");
    return dispatch<SDX_FLOAT_TYPES>(state_type, [&](auto tag) -> Status {
      using S = typename decltype(tag)::type;
      for (size_t i = 0; i < state.size(); ++i) present.data<S>()[i] = store_as<S, C>(state[i]);
      return Status::ok();
    }, "present_state");
  }

  bool gating_ = true, delta_ = true;
  int64_t q_heads_ = 0, kv_heads_ = 0;
  float scale_ = 0.0f;
};

const backend::KernelRegistrar kLinearAttention(
    {"LinearAttention", "", 27, backend::kAnyOpset, backend::kernel_factory<LinearAttentionKernel>()});

}  // namespace
}  // namespace sdx::cpu
