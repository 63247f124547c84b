// ArgMax, ArgMin: int64 index of the largest / smallest element along `axis`
// (keepdims, select_last_index from opset 12). The first NaN wins, as in numpy.
#include <cmath>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

template <bool kMax>
class ArgKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 0);
    keepdims_ = node.attr_int("keepdims", 1) != 0;
    select_last_ = node.attr_int("select_last_index", 0) != 0;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const char* name = kMax ? "ArgMax" : "ArgMin";
    const Tensor& x = ctx.input(0);
    const int rank = x.rank() == 0 ? 1 : x.rank();  // a scalar behaves as shape [1]
    SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, rank), std::string(name) + " attribute 'axis'");
    Shape xs = x.rank() == 0 ? Shape{1} : x.shape();
    const int64_t n = xs.dim(axis);
    if (n == 0) return invalid_argument(std::string(name) + ": cannot take the arg of an empty axis " + std::to_string(axis));
    std::vector<int64_t> od;
    for (int d = 0; d < rank; ++d) {
      if (d != axis) od.push_back(xs.dim(d));
      else if (keepdims_) od.push_back(1);
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt64, Shape(od)), name);
    const int64_t outer = xs.size_between(0, axis);
    const int64_t inner = xs.size_between(axis + 1, rank);
    int64_t* py = y.data<int64_t>();
    return dispatch<SDX_NUMERIC_TYPES, bool>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          using C = std::conditional_t<std::is_same_v<T, bool>, int, compute_t<T>>;
          const T* px = x.data<T>();
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t i = 0; i < inner; ++i) {
              const T* base = px + o * n * inner + i;
              C best = load_as<C>(base[0]);
              int64_t bi = 0;
              for (int64_t k = 1; k < n; ++k) {
                C v = load_as<C>(base[k * inner]);
                if constexpr (std::is_floating_point_v<C>) {
                  if (std::isnan(best)) break;
                  if (std::isnan(v)) { best = v; bi = k; break; }
                }
                bool better = kMax ? (select_last_ ? v >= best : v > best) : (select_last_ ? v <= best : v < best);
                if (better) { best = v; bi = k; }
              }
              py[o * inner + i] = bi;
            }
          }
          return Status::ok();
        },
        name);
  }

 private:
  int64_t axis_ = 0;
  bool keepdims_ = true;
  bool select_last_ = false;
};

const backend::KernelRegistrar kArgMax({"ArgMax", "", 1, backend::kAnyOpset, backend::kernel_factory<ArgKernel<true>>()});
const backend::KernelRegistrar kArgMin({"ArgMin", "", 1, backend::kAnyOpset, backend::kernel_factory<ArgKernel<false>>()});

}  // namespace
}  // namespace sdx::cpu
