// CausalConvWithState (ONNX opset 27): depthwise causal 1-D convolution that carries
// the last k-1 input positions as state, with optional bias and fused SiLU.
//   output[b, c, t] = act(bias[c] + sum_j w[c, 0, j] * padded[b, c, t + j])
// where padded = concat(past_state (zeros if absent), input) along time, and
// present_state is the last k-1 positions of padded.
#include <cmath>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {


class CausalConvWithStateKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const std::string act = node.attr_string("activation", "none");
    if (act != "none" && act != "silu" && act != "swish")
      return invalid_argument("activation must be none, silu or swish; got '" + act + "'");
    silu_ = act != "none";
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.rank() != 3) return invalid_argument("input must be rank 3 (batch, channels, length), got " + x.shape().to_string());
    const int64_t B = x.shape()[0], Ch = x.shape()[1], L = x.shape()[2];
    if (w.rank() != 3 || w.shape()[0] != Ch || w.shape()[1] != 1 || w.shape()[2] < 1)
      return invalid_argument("weight must be (channels, 1, k), got " + w.shape().to_string());
    const int64_t K = w.shape()[2], P = K - 1;
    if (w.dtype() != x.dtype()) return invalid_argument("weight must have the type of input");
    const bool has_bias = ctx.has_input(2), has_state = ctx.has_input(3);
    if (has_bias && (ctx.input(2).shape() != Shape{Ch} || ctx.input(2).dtype() != x.dtype()))
      return invalid_argument("bias must be [channels] of the input type");
    if (has_state && (ctx.input(3).shape() != Shape{B, Ch, P} || ctx.input(3).dtype() != x.dtype()))
      return invalid_argument("past_state must be [batch, channels, k-1] = " + Shape{B, Ch, P}.to_string() + ", got " +
                              ctx.input(3).shape().to_string());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "output");
    SDX_ASSIGN_OR_RETURN(Tensor st, ctx.allocate_output(1, x.dtype(), Shape{B, Ch, P}), "present_state");
    return dispatch<SDX_FLOAT_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      std::vector<C> padded(static_cast<size_t>(P + L));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < Ch; ++c) {
          const int64_t bc = b * Ch + c;
          for (int64_t i = 0; i < P; ++i)
            padded[static_cast<size_t>(i)] = has_state ? load_as<C>(ctx.input(3).data<T>()[bc * P + i]) : C(0);
          for (int64_t t = 0; t < L; ++t) padded[static_cast<size_t>(P + t)] = load_as<C>(x.data<T>()[bc * L + t]);
          const C bias = has_bias ? load_as<C>(ctx.input(2).data<T>()[c]) : C(0);
          const T* wc = w.data<T>() + c * K;
          for (int64_t t = 0; t < L; ++t) {
            C acc = 0;
            for (int64_t j = 0; j < K; ++j) acc += load_as<C>(wc[j]) * padded[static_cast<size_t>(t + j)];
            acc = round_as<T, C>(acc + bias);
            if (silu_) acc = acc / (C(1) + std::exp(-acc));
            y.data<T>()[bc * L + t] = store_as<T, C>(acc);
          }
          for (int64_t i = 0; i < P; ++i) st.data<T>()[bc * P + i] = store_as<T, C>(padded[static_cast<size_t>(L + i)]);
        }
      return Status::ok();
    }, "CausalConvWithState");
  }

 private:
  bool silu_ = false;
};

const backend::KernelRegistrar kCausalConvWithState(
    {"CausalConvWithState", "", 27, backend::kAnyOpset, backend::kernel_factory<CausalConvWithStateKernel>()});

}  // namespace
}  // namespace sdx::cpu
