// SwiGLU (ONNX opset 28): Y = A * sigmoid(alpha * A) * B, the gated activation of
// transformer feed-forward blocks. A and B have identical shapes (no broadcasting).
#include <cmath>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {


class SwiGLUKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    alpha_ = node.attr_float("alpha", 1.0f);
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.shape() != b.shape()) return invalid_argument("A" + a.shape().to_string() + " and B" + b.shape().to_string() + " must have the same shape");
    if (a.dtype() != b.dtype()) return invalid_argument("A and B must have the same element type");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, a.dtype(), a.shape()), "");
    return dispatch<SDX_FLOAT_TYPES>(a.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* ad = a.data<T>();
      const T* bd = b.data<T>();
      T* yd = y.data<T>();
      const C alpha = static_cast<C>(alpha_);
      for (int64_t i = 0; i < a.numel(); ++i) {
        const C x = load_as<C>(ad[i]);
        const C sig = round_as<T, C>(C(1) / (C(1) + std::exp(-alpha * x)));
        yd[i] = store_as<T, C>(round_as<T, C>(x * sig) * load_as<C>(bd[i]));
      }
      return Status::ok();
    }, "SwiGLU");
  }

 private:
  float alpha_ = 1.0f;
};

const backend::KernelRegistrar kSwiGLU({"SwiGLU", "", 1, backend::kAnyOpset, backend::kernel_factory<SwiGLUKernel>()});

}  // namespace
}  // namespace sdx::cpu
