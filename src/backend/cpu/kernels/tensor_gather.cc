// Tensor-manipulation kernels that read elements at given indices:
// Gather, GatherElements, GatherND, OneHot. Negative indices count from the end;
// out-of-range indices are errors (OneHot: out-of-range rows stay "off", per the spec).
// Gather splits its slice copies over the session's pool.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// Bytes copied per parallel chunk of Gather (about 10 us of copying).
constexpr int64_t kGatherGrainBytes = int64_t{1} << 17;

// Indices as int64, normalized into [0, dim).
Result<std::vector<int64_t>> read_indices(const Tensor& t, int64_t dim, const std::string& op) {
  SDX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_int64s(t, op + " indices", IntTypes::kInt32Or64), "");
  for (int64_t& i : idx) SDX_RETURN_IF_ERROR(normalize_index(i, dim, (op + " indices").c_str()), "");
  return idx;
}

// ---- Gather along `axis`: out = data[:axis] + indices.shape + data[axis+1:].
class GatherKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 0);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const int r = x.rank();
    if (r == 0) return invalid_argument("Gather data must have rank >= 1");
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, r), "Gather axis");
    const int64_t dim = x.shape()[ax];
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ind, dim, "Gather"), "");
    std::vector<int64_t> out_dims(x.shape().dims().begin(), x.shape().dims().begin() + ax);
    for (int64_t d : ind.shape().dims()) out_dims.push_back(d);
    for (int d = ax + 1; d < r; ++d) out_dims.push_back(x.shape()[d]);
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "Gather output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
    const int64_t outer = x.shape().size_between(0, ax), inner = x.shape().size_between(ax + 1, r);
    const int64_t n = static_cast<int64_t>(idx.size());
    return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const int64_t* pi = idx.data();
      // Slices (o, j) split over the pool in chunks of about kGatherGrainBytes.
      auto copy_slices = [&](int64_t first, int64_t last) {
        for (int64_t s = first; s < last; ++s) {
          const int64_t o = s / n, j = s % n;
          const T* from = px + (o * dim + pi[j]) * inner;
          if (inner == 1) py[s] = *from;
          else copy_n(from, inner, py + s * inner);
        }
      };
      if constexpr (std::is_trivially_copyable_v<T>) {
        const int64_t grain = std::max<int64_t>(1, kGatherGrainBytes / (inner * static_cast<int64_t>(sizeof(T))));
        parallel_for(outer * n, grain, copy_slices);
      } else {
        copy_slices(0, outer * n);  // strings allocate: one thread
      }
      return Status::ok();
    }, "Gather");
  }

 private:
  int64_t axis_ = 0;
};
const backend::KernelRegistrar kGather({"Gather", "", 1, backend::kAnyOpset, backend::kernel_factory<GatherKernel>()});

// ---- GatherElements: out[i] = data[i with axis replaced by indices[i]].
class GatherElementsKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 0);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const int r = x.rank();
    if (r == 0 || ind.rank() != r)
      return invalid_argument("GatherElements data and indices must have the same rank >= 1, got " + x.type_string() + " and " +
                              ind.type_string());
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, r), "GatherElements axis");
    for (int d = 0; d < r; ++d)
      if (d != ax && ind.shape()[d] > x.shape()[d])
        return invalid_argument("GatherElements indices shape " + ind.shape().to_string() + " exceeds data shape " +
                                x.shape().to_string() + " outside the axis");
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ind, x.shape()[ax], "GatherElements"), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), ind.shape()), "");
    std::vector<int64_t> strides = contiguous_strides(x.shape().dims());
    const int64_t axis_stride = strides[static_cast<size_t>(ax)];
    strides[static_cast<size_t>(ax)] = 0;
    return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for_each_strided(0, strides, ind.shape().dims(), [&](int64_t o, int64_t i) {
        py[o] = px[i + idx[static_cast<size_t>(o)] * axis_stride];
      });
      return Status::ok();
    }, "GatherElements");
  }

 private:
  int64_t axis_ = 0;
};
const backend::KernelRegistrar kGatherElements(
    {"GatherElements", "", 11, backend::kAnyOpset, backend::kernel_factory<GatherElementsKernel>()});

// ---- GatherND with batch_dims.
class GatherNDKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    batch_dims_ = node.attr_int("batch_dims", 0);
    if (batch_dims_ < 0) return invalid_argument("GatherND batch_dims must not be negative");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const int r = x.rank(), q = ind.rank();
    const int b = static_cast<int>(batch_dims_);
    if (q < 1 || r < 1 || b >= q || b >= r)
      return invalid_argument("GatherND needs batch_dims < rank of data and indices, got " + x.type_string() + ", " +
                              ind.type_string());
    const int64_t k = ind.shape()[q - 1];
    if (k < 1 || k > r - b)
      return invalid_argument("GatherND index tuples of length " + std::to_string(k) + " do not fit data " + x.type_string());
    for (int d = 0; d < b; ++d)
      if (ind.shape()[d] != x.shape()[d])
        return invalid_argument("GatherND batch dims of data " + x.shape().to_string() + " and indices " +
                                ind.shape().to_string() + " differ");
    if (ind.dtype() != DType::kInt32 && ind.dtype() != DType::kInt64)
      return invalid_argument("GatherND indices must be int32 or int64");
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_int64s(ind, "GatherND indices"), "");
    std::vector<int64_t> out_dims(ind.shape().dims().begin(), ind.shape().dims().end() - 1);
    for (int d = b + static_cast<int>(k); d < r; ++d) out_dims.push_back(x.shape()[d]);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape(out_dims)), "");
    const int64_t batches = x.shape().size_between(0, b);
    const int64_t per_batch = ind.shape().size_between(b, q - 1);  // index tuples per batch
    const int64_t slice = x.shape().size_between(b + static_cast<int>(k), r);
    const int64_t batch_stride = x.shape().size_between(b, r);
    std::vector<int64_t> strides = contiguous_strides(x.shape().dims());
    // Validate and resolve every tuple to an element offset first.
    std::vector<int64_t> offsets(static_cast<size_t>(batches * per_batch));
    for (int64_t t = 0; t < batches * per_batch; ++t) {
      int64_t off = (t / (per_batch == 0 ? 1 : per_batch)) * batch_stride;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = idx[static_cast<size_t>(t * k + j)];
        SDX_RETURN_IF_ERROR(normalize_index(v, x.shape()[b + static_cast<int>(j)], "GatherND"), "");
        off += v * strides[static_cast<size_t>(b + j)];
      }
      offsets[static_cast<size_t>(t)] = off;
    }
    return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (size_t t = 0; t < offsets.size(); ++t) copy_n(px + offsets[t], slice, py + static_cast<int64_t>(t) * slice);
      return Status::ok();
    }, "GatherND");
  }

 private:
  int64_t batch_dims_ = 0;
};
const backend::KernelRegistrar kGatherND({"GatherND", "", 11, backend::kAnyOpset, backend::kernel_factory<GatherNDKernel>()});

// Any numeric tensor as int64 values (floats truncate toward zero).
Result<std::vector<int64_t>> read_numeric_as_int(const Tensor& t, const std::string& what) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  SDX_RETURN_IF_ERROR((dispatch<SDX_NUMERIC_TYPES>(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < out.size(); ++i) {
      double v;
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) v = t.data<T>()[i].to_float();
      else v = static_cast<double>(t.data<T>()[i]);
      if (!std::isfinite(v) || std::fabs(v) > 9.0e18) return invalid_argument(what + " holds a value out of int64 range");
      out[i] = static_cast<int64_t>(v);
    }
    return Status::ok();
  }, what)), "");
  return out;
}

// ---- OneHot: values = [off, on]; a new axis of size depth.
class OneHotKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", -1);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& ind = ctx.input(0);
    const Tensor& values = ctx.input(2);
    if (values.numel() != 2) return invalid_argument("OneHot values must hold [off, on], got " + values.type_string());
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> dv, read_numeric_as_int(ctx.input(1), "OneHot depth"), "");
    if (dv.size() != 1 || dv[0] < 1) return invalid_argument("OneHot depth must be one positive value");
    const int64_t depth = dv[0];
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_numeric_as_int(ind, "OneHot indices"), "");
    const int r = ind.rank();
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, r + 1), "OneHot axis");
    std::vector<int64_t> out_dims(ind.shape().dims().begin(), ind.shape().dims().begin() + ax);
    out_dims.push_back(depth);
    for (int d = ax; d < r; ++d) out_dims.push_back(ind.shape()[d]);
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "OneHot output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, values.dtype(), out_shape), "");
    const int64_t outer = ind.shape().size_between(0, ax), inner = ind.shape().size_between(ax, r);
    return dispatch_storage(values.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T off = values.data<T>()[0], on = values.data<T>()[1];
      T* py = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) py[i] = off;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t v = idx[static_cast<size_t>(o * inner + i)];
          if (v < 0) v += depth;
          if (v >= 0 && v < depth) py[(o * depth + v) * inner + i] = on;
        }
      return Status::ok();
    }, "OneHot");
  }

 private:
  int64_t axis_ = -1;
};
const backend::KernelRegistrar kOneHot({"OneHot", "", 9, backend::kAnyOpset, backend::kernel_factory<OneHotKernel>()});

}  // namespace
}  // namespace sdx::cpu
