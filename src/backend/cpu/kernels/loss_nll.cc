// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// Both view the input as [N, C, D] (D = product of the trailing dims, 1 for 2-D
// input) and the target as [N, D]. loss[n, d] = -input[n, t, d] * weight[t] with
// t = target[n, d]; targets equal to ignore_index contribute 0 and weigh 0.
// reduction: "none" (shape of target), "sum", or "mean" (sum / total weight).
// SoftmaxCrossEntropyLoss first takes log_softmax over C (optional 2nd output).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

enum class Reduction { kNone, kSum, kMean };

template <bool kSce>
class LossKernel final : public backend::Kernel {
 public:
  static constexpr const char* kName = kSce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";

  Status init(const ir::Node& node) override {
    std::string r = node.attr_string("reduction", "mean");
    if (r == "none") reduction_ = Reduction::kNone;
    else if (r == "sum") reduction_ = Reduction::kSum;
    else if (r == "mean") reduction_ = Reduction::kMean;
    else return invalid_argument(std::string(kName) + ": unknown reduction '" + r + "'");
    if (node.attr("ignore_index")) ignore_index_ = node.attr_int("ignore_index", 0);
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& target = ctx.input(1);
    if (x.rank() < 2) return invalid_argument(std::string(kName) + ": input must have rank >= 2, got " + x.shape().to_string());
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    const int64_t d = x.shape().size_between(2, x.rank());
    std::vector<int64_t> want_t(x.shape().dims());
    want_t.erase(want_t.begin() + 1);
    if (target.shape().dims() != want_t)
      return invalid_argument(std::string(kName) + ": target shape " + target.shape().to_string() + " does not match input " +
                              x.shape().to_string());
    if (target.dtype() != DType::kInt64 && target.dtype() != DType::kInt32)
      return invalid_argument(std::string(kName) + ": target must be int32 or int64");
    const bool has_w = ctx.has_input(2);
    if (has_w && (ctx.input(2).numel() != c || ctx.input(2).dtype() != x.dtype()))
      return invalid_argument(std::string(kName) + ": weight must be a [" + std::to_string(c) + "] tensor of the input type");
    std::vector<int64_t> t(static_cast<size_t>(target.numel()));
    for (int64_t i = 0; i < target.numel(); ++i)
      t[static_cast<size_t>(i)] = target.dtype() == DType::kInt64 ? target.data<int64_t>()[i] : target.data<int32_t>()[i];
    for (int64_t v : t) {
      if (ignore_index_ && v == *ignore_index_) continue;
      if (v < 0 || v >= c)
        return invalid_argument(std::string(kName) + ": target value " + std::to_string(v) + " is out of range [0, " +
                                std::to_string(c) + ")");
    }
    Shape loss_shape = reduction_ == Reduction::kNone ? target.shape() : Shape{};
    SDX_ASSIGN_OR_RETURN(Tensor loss, ctx.allocate_output(0, x.dtype(), loss_shape), kName);
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          // Log-probabilities in double: softmax'd scores for SCE, the input for NLL.
          std::vector<double> lp;
          if constexpr (kSce) {
            lp.resize(static_cast<size_t>(x.numel()));
            for (int64_t b = 0; b < n; ++b)
              for (int64_t j = 0; j < d; ++j) {
                const int64_t base = b * c * d + j;
                double mx = -INFINITY;
                for (int64_t k = 0; k < c; ++k) mx = std::fmax(mx, load_as<double>(px[base + k * d]));
                double s = 0;
                for (int64_t k = 0; k < c; ++k) s += std::exp(load_as<double>(px[base + k * d]) - mx);
                const double ls = std::log(s);
                for (int64_t k = 0; k < c; ++k) lp[static_cast<size_t>(base + k * d)] = load_as<double>(px[base + k * d]) - mx - ls;
              }
            if (ctx.num_outputs() > 1 && ctx.wants_output(1)) {
              SDX_ASSIGN_OR_RETURN(Tensor lpt, ctx.allocate_output(1, x.dtype(), x.shape()), kName);
              for (int64_t i = 0; i < x.numel(); ++i) lpt.data<T>()[i] = store_as<T>(lp[static_cast<size_t>(i)]);
            }
          }
          auto logp = [&](int64_t i) { return kSce ? lp[static_cast<size_t>(i)] : load_as<double>(px[i]); };
          const T* pw = has_w ? ctx.input(2).data<T>() : nullptr;
          T* pl = loss.data<T>();
          double total = 0, wsum = 0;
          for (int64_t b = 0; b < n; ++b)
            for (int64_t j = 0; j < d; ++j) {
              const int64_t ti = b * d + j;
              const int64_t cls = t[static_cast<size_t>(ti)];
              double l = 0, w = 0;
              if (!(ignore_index_ && cls == *ignore_index_)) {
                w = pw ? load_as<double>(pw[cls]) : 1.0;
                l = -logp(b * c * d + cls * d + j) * w;
              }
              if (reduction_ == Reduction::kNone) pl[ti] = store_as<T>(l);
              total += l;
              wsum += w;
            }
          if (reduction_ == Reduction::kSum) pl[0] = store_as<T>(total);
          else if (reduction_ == Reduction::kMean) pl[0] = store_as<T>(total / wsum);
          return Status::ok();
        },
        kName);
  }

 private:
  Reduction reduction_ = Reduction::kMean;
  std::optional<int64_t> ignore_index_;
};

const backend::KernelRegistrar kNll(
    {"NegativeLogLikelihoodLoss", "", 1, backend::kAnyOpset, backend::kernel_factory<LossKernel<false>>()});
const backend::KernelRegistrar kSce(
    {"SoftmaxCrossEntropyLoss", "", 1, backend::kAnyOpset, backend::kernel_factory<LossKernel<true>>()});

}  // namespace
}  // namespace sdx::cpu
