// ONNX-ML feature ops: ArrayFeatureExtractor (select columns of the last axis) and
// Binarizer (x > threshold ? 1 : 0).
#include <string>

#include "core/type_dispatch.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// Y[..., j] = X[..., indices[j]] for the flattened indices; a 1-D X gives a [1, n] output
// (onnxruntime's convention, followed by the ONNX reference).
Status array_feature_extractor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (ind.dtype() != DType::kInt64)
    return invalid_argument("ArrayFeatureExtractor: indices must be int64, got " + ind.type_string());
  if (x.rank() < 1) return invalid_argument("ArrayFeatureExtractor: X must have rank >= 1, got a scalar");
  const int64_t cols = x.shape().dim(x.rank() - 1);
  const int64_t n = ind.numel();
  const int64_t* pi = ind.data<int64_t>();
  for (int64_t j = 0; j < n; ++j)
    if (pi[j] < 0 || pi[j] >= cols)
      return invalid_argument("ArrayFeatureExtractor: index " + std::to_string(pi[j]) + " is out of range [0, " +
                              std::to_string(cols) + ") for X " + x.type_string());
  std::vector<int64_t> dims = x.shape().dims();
  if (dims.size() == 1) dims.insert(dims.begin(), 1);
  dims.back() = n;
  const int64_t rows = x.shape().size_between(0, x.rank() - 1);
  SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(dims), "");
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
  return dispatch<SDX_ALL_TYPES>(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) py[r * n + j] = px[r * cols + pi[j]];
    return Status::ok();
  }, "ArrayFeatureExtractor");
}

class BinarizerKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    threshold_ = node.attr_float("threshold", 0.0f);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
    return dispatch<SDX_NUMERIC_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_integral_v<T>, double, compute_t<T>>;
      const C t = static_cast<C>(threshold_);
      const T one = from_f32<T>(1.0f), zero = from_f32<T>(0.0f);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = static_cast<C>(to_c(px[i])) > t ? one : zero;
      return Status::ok();
    }, "Binarizer");
  }

 private:
  template <typename T>
  static auto to_c(T v) {
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return v.to_float();
    else return v;
  }
  float threshold_ = 0.0f;
};

const backend::KernelRegistrar kArrayFeatureExtractor({"ArrayFeatureExtractor", "ai.onnx.ml", 1, backend::kAnyOpset,
                                                       backend::function_kernel(array_feature_extractor)});
const backend::KernelRegistrar kBinarizer(
    {"Binarizer", "ai.onnx.ml", 1, backend::kAnyOpset, backend::kernel_factory<BinarizerKernel>()});

}  // namespace
}  // namespace sdx::cpu
