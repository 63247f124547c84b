// Tensor-manipulation kernels that write updates at given indices into a copy of the data:
// ScatterElements (reduction none/add/mul/max/min), Scatter (deprecated alias), ScatterND.
// Negative indices count from the end; out-of-range indices are errors.
#include <algorithm>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Result<Reduction> parse_reduction(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return invalid_argument(node.op_type() + " reduction '" + r + "' is not one of none, add, mul, max, min");
}

template <typename T>
compute_t<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return v.to_float();
  else return v;
}

// Copies `data` to output 0, then for every (dst offset, src offset, count) run reported by
// for_each_update applies dst = reduce(dst, updates[src]).
template <typename Visit>
Status scatter_into_copy(KernelContext& ctx, const Tensor& data, const Tensor& updates, Reduction red, Visit&& for_each_update) {
  if (updates.dtype() != data.dtype())
    return invalid_argument(ctx.node().op_type() + " updates type " + updates.type_string() + " differs from data " +
                            data.type_string());
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, data.dtype(), data.shape()), "");
  SDX_RETURN_IF_ERROR(copy_tensor(data, y, ctx.node().op_type()), "");
  if (red == Reduction::kNone) {
    return dispatch_storage(data.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* py = y.data<T>();
      const T* pu = updates.data<T>();
      for_each_update([&](int64_t dst, int64_t src, int64_t n) { copy_n(pu + src, n, py + dst); });
      return Status::ok();
    }, ctx.node().op_type());
  }
  return dispatch<SDX_NUMERIC_TYPES>(data.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* py = y.data<T>();
    const T* pu = updates.data<T>();
    for_each_update([&](int64_t dst, int64_t src, int64_t n) {
      for (int64_t k = 0; k < n; ++k) {
        C a = to_compute(py[dst + k]), b = to_compute(pu[src + k]), v = a;
        switch (red) {
          case Reduction::kAdd: v = static_cast<C>(a + b); break;
          case Reduction::kMul: v = static_cast<C>(a * b); break;
          case Reduction::kMax: v = std::max(a, b); break;
          case Reduction::kMin: v = std::min(a, b); break;
          case Reduction::kNone: v = b; break;
        }
        if constexpr (std::is_same_v<T, C>) py[dst + k] = v;
        else py[dst + k] = T::from_float(v);
      }
    });
    return Status::ok();
  }, ctx.node().op_type() + " with a reduction");
}

// ---- ScatterElements / Scatter: y = data; y[i with axis replaced by indices[i]] op= updates[i].
class ScatterElementsKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 0);
    SDX_ASSIGN_OR_RETURN(red_, parse_reduction(node), "");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    const std::string op = ctx.node().op_type();
    const int r = x.rank();
    if (r == 0 || ind.rank() != r || upd.shape() != ind.shape())
      return invalid_argument(op + " needs data, indices and updates of one rank >= 1 with indices and updates alike, got " +
                              x.type_string() + ", " + ind.type_string() + ", " + upd.type_string());
    if (ind.dtype() != DType::kInt32 && ind.dtype() != DType::kInt64)
      return invalid_argument(op + " indices must be int32 or int64");
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, r), op + " axis");
    for (int d = 0; d < r; ++d)
      if (d != ax && ind.shape()[d] > x.shape()[d])
        return invalid_argument(op + " indices shape " + ind.shape().to_string() + " exceeds data shape " +
                                x.shape().to_string());
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_int64s(ind, op + " indices"), "");
    for (int64_t& i : idx) SDX_RETURN_IF_ERROR(normalize_index(i, x.shape()[ax], op.c_str()), "");
    std::vector<int64_t> strides = contiguous_strides(x.shape().dims());
    const int64_t axis_stride = strides[static_cast<size_t>(ax)];
    strides[static_cast<size_t>(ax)] = 0;
    return scatter_into_copy(ctx, x, upd, red_, [&](auto&& apply) {
      for_each_strided(0, strides, ind.shape().dims(), [&](int64_t o, int64_t i) {
        apply(i + idx[static_cast<size_t>(o)] * axis_stride, o, 1);
      });
    });
  }

 private:
  int64_t axis_ = 0;
  Reduction red_ = Reduction::kNone;
};
const backend::KernelRegistrar kScatterElements(
    {"ScatterElements", "", 11, backend::kAnyOpset, backend::kernel_factory<ScatterElementsKernel>()});
const backend::KernelRegistrar kScatter({"Scatter", "", 9, 10, backend::kernel_factory<ScatterElementsKernel>()});

// ---- ScatterND: y = data; y[indices[t]] op= updates[t] (slices of data.shape[k:]).
class ScatterNDKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_ASSIGN_OR_RETURN(red_, parse_reduction(node), "");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    const int r = x.rank(), q = ind.rank();
    if (q < 1) return invalid_argument("ScatterND indices must have rank >= 1");
    if (ind.dtype() != DType::kInt64 && ind.dtype() != DType::kInt32)
      return invalid_argument("ScatterND indices must be int64");
    const int64_t k = ind.shape()[q - 1];
    if (k < 1 || k > r) return invalid_argument("ScatterND index tuples of length " + std::to_string(k) + " do not fit data " +
                                                x.type_string());
    std::vector<int64_t> want(ind.shape().dims().begin(), ind.shape().dims().end() - 1);
    for (int d = static_cast<int>(k); d < r; ++d) want.push_back(x.shape()[d]);
    if (upd.shape().dims() != want)
      return invalid_argument("ScatterND updates shape " + upd.shape().to_string() + " should be " + dims_to_string(want));
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_int64s(ind, "ScatterND indices"), "");
    const int64_t tuples = ind.shape().size_between(0, q - 1);
    const int64_t slice = x.shape().size_between(static_cast<int>(k), r);
    std::vector<int64_t> strides = contiguous_strides(x.shape().dims());
    std::vector<int64_t> offsets(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = idx[static_cast<size_t>(t * k + j)];
        SDX_RETURN_IF_ERROR(normalize_index(v, x.shape()[static_cast<int>(j)], "ScatterND"), "");
        off += v * strides[static_cast<size_t>(j)];
      }
      offsets[static_cast<size_t>(t)] = off;
    }
    return scatter_into_copy(ctx, x, upd, red_, [&](auto&& apply) {
      for (int64_t t = 0; t < tuples; ++t) apply(offsets[static_cast<size_t>(t)], t * slice, slice);
    });
  }

 private:
  Reduction red_ = Reduction::kNone;
};
const backend::KernelRegistrar kScatterND({"ScatterND", "", 11, backend::kAnyOpset, backend::kernel_factory<ScatterNDKernel>()});

}  // namespace
}  // namespace sdx::cpu
