// FlexAttention (domain ai.onnx.preview, version 1): scaled dot-product attention on
// rank-4 inputs whose scores and probabilities can be rewritten by user subgraphs:
//   scores = (Q*sqrt(scale)) @ (K*sqrt(scale))^T, cast to the softmax precision
//   scores = score_mod(scores); probs = softmax(scores); probs = prob_mod(probs)
//   Y = probs @ V
// The modifier subgraphs take and return the whole [B, Hq, L, S] tensor; they run
// through the interpreter (ctx.run_subgraph). Query heads share KV heads in groups.
#include <cmath>
#include <limits>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {


class FlexAttentionKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    if (const ir::Attribute* a = node.attr("scale")) has_scale_ = true, scale_ = a->f;
    if (const ir::Attribute* a = node.attr("score_mod")) score_mod_ = a->g.get();
    if (const ir::Attribute* a = node.attr("prob_mod")) prob_mod_ = a->g.get();
    precision_ = node.attr_int("softmax_precision", 0);
    if (precision_ != 0 && precision_ != 1 && precision_ != 10 && precision_ != 11 && precision_ != 16)
      return invalid_argument("softmax_precision must be float, float16, bfloat16 or double; got " + std::to_string(precision_));
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const DType qt = ctx.input(0).dtype();
    DType cd = qt == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
    if (precision_ != 0) cd = dtype_from_onnx(static_cast<int>(precision_)).value_or(cd);
    return dispatch<SDX_FLOAT_TYPES>(qt, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      return dispatch<SDX_FLOAT_TYPES>(cd, [&](auto ctag) -> Status {
        using CD = typename decltype(ctag)::type;
        return compute<T, CD>(ctx);
      }, "FlexAttention softmax_precision");
    }, "FlexAttention");
  }

 private:
  // Runs a modifier subgraph on t, checking it returns the same type and shape.
  static Result<Tensor> apply_mod(backend::KernelContext& ctx, const ir::Graph* g, const Tensor& t, const char* name) {
    SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs, ctx.run_subgraph(*g, {Datum::tensor(t)}), name);
    if (outs.size() != 1 || !outs[0].is_tensor()) return invalid_argument(std::string(name) + " must produce exactly one tensor");
    const Tensor& o = outs[0].as_tensor();
    if (o.shape() != t.shape() || o.dtype() != t.dtype())
      return invalid_argument(std::string(name) + " returned " + o.type_string() + ", expected " + t.type_string());
    return o;
  }

  template <typename T, typename CD>
  Status compute(backend::KernelContext& ctx) const {
    using C = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<CD, double>, double, float>;
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) return invalid_argument("Q, K and V must be rank 4");
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) return invalid_argument("Q, K and V must share one element type");
    const int64_t B = q.shape()[0], Hq = q.shape()[1], L = q.shape()[2], E = q.shape()[3];
    const int64_t Hk = k.shape()[1], S = k.shape()[2], Ev = v.shape()[3];
    if (k.shape()[0] != B || v.shape()[0] != B || v.shape()[1] != Hk || v.shape()[2] != S || k.shape()[3] != E)
      return invalid_argument("K" + k.shape().to_string() + "/V" + v.shape().to_string() + " do not match Q" + q.shape().to_string());
    if (Hk == 0 || Hq % Hk) return invalid_argument("q heads must be a multiple of kv heads");
    const int64_t group = Hq / Hk;
    const float scale = has_scale_ ? scale_ : 1.0f / std::sqrt(static_cast<float>(E));
    const C ss = round_as<T, C>(static_cast<C>(std::sqrt(scale)));
    const DType cd = dtype_of<CD>();
    SDX_ASSIGN_OR_RETURN(Tensor scores, Tensor::allocate(cd, Shape{B, Hq, L, S}), "scores");
    CD* sd = scores.data<CD>();
    const T* qd = q.data<T>();
    const T* kd = k.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < L; ++i) {
          const int64_t qo = ((b * Hq + h) * L + i) * E;
          for (int64_t j = 0; j < S; ++j) {
            const int64_t ko = ((b * Hk + kh) * S + j) * E;
            C acc = 0;
            for (int64_t e = 0; e < E; ++e)
              acc += round_as<T, C>(load_as<C>(qd[qo + e]) * ss) * round_as<T, C>(load_as<C>(kd[ko + e]) * ss);
            sd[((b * Hq + h) * L + i) * S + j] = store_as<CD, C>(round_as<T, C>(acc));
          }
        }
      }
    if (score_mod_) {
      SDX_ASSIGN_OR_RETURN(scores, apply_mod(ctx, score_mod_, scores, "score_mod"), "");
    }
    SDX_ASSIGN_OR_RETURN(Tensor probs, Tensor::allocate(cd, Shape{B, Hq, L, S}), "probs");
    const CD* in = scores.data<CD>();
    CD* pd = probs.data<CD>();
    for (int64_t r = 0; r < B * Hq * L; ++r) {
      const CD* row = in + r * S;
      C mx = -std::numeric_limits<C>::infinity();
      for (int64_t j = 0; j < S; ++j) mx = std::max(mx, load_as<C>(row[j]));
      C sum = 0;
      std::vector<C> e(static_cast<size_t>(S));
      for (int64_t j = 0; j < S; ++j) sum += e[static_cast<size_t>(j)] = round_as<CD, C>(std::exp(load_as<C>(row[j]) - mx));
      for (int64_t j = 0; j < S; ++j) pd[r * S + j] = store_as<CD, C>(e[static_cast<size_t>(j)] / round_as<CD, C>(sum));
    }
    if (prob_mod_) {
      SDX_ASSIGN_OR_RETURN(probs, apply_mod(ctx, prob_mod_, probs, "prob_mod"), "");
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, v.dtype(), Shape{B, Hq, L, Ev}), "Y");
    const CD* pp = probs.data<CD>();
    const T* vd = v.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < L; ++i) {
          const CD* prow = pp + ((b * Hq + h) * L + i) * S;
          T* yo = y.data<T>() + ((b * Hq + h) * L + i) * Ev;
          for (int64_t e = 0; e < Ev; ++e) {
            C acc = 0;
            for (int64_t j = 0; j < S; ++j) acc += load_as<C>(prow[j]) * round_as<CD, C>(load_as<C>(vd[((b * Hk + kh) * S + j) * Ev + e]));
            yo[e] = store_as<T, C>(round_as<CD, C>(acc));
          }
        }
      }
    return Status::ok();
  }

  bool has_scale_ = false;
  float scale_ = 0.0f;
  int64_t precision_ = 0;
  const ir::Graph* score_mod_ = nullptr;
  const ir::Graph* prob_mod_ = nullptr;
};

const backend::KernelRegistrar kFlexAttention(
    {"FlexAttention", "ai.onnx.preview", 1, backend::kAnyOpset, backend::kernel_factory<FlexAttentionKernel>()});

}  // namespace
}  // namespace sdx::cpu
