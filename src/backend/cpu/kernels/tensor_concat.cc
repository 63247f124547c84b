// Tensor-manipulation kernels that join, split or repeat tensors:
// Concat, Split, Tile, Expand, Compress.
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/threading/parallel_copy.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// ---- Concat along `axis`.
class ConcatKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    if (!node.attr("axis") && node.opset() >= 4) return invalid_argument("Concat needs an 'axis' attribute");
    axis_ = node.attr_int("axis", 1);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    std::vector<const Tensor*> xs;
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i)) xs.push_back(&ctx.input(i));
    if (xs.empty()) return invalid_argument("Concat needs at least one input");
    const Tensor& x0 = *xs[0];
    const int r = x0.rank();
    if (r == 0) return invalid_argument("Concat inputs must have rank >= 1");
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, r), "Concat axis");
    std::vector<int64_t> out_dims = x0.shape().dims();
    out_dims[static_cast<size_t>(ax)] = 0;
    for (const Tensor* t : xs) {
      if (t->dtype() != x0.dtype() || t->rank() != r)
        return invalid_argument("Concat inputs differ in type or rank: " + x0.type_string() + " vs " + t->type_string());
      for (int d = 0; d < r; ++d)
        if (d != ax && t->shape()[d] != x0.shape()[d])
          return invalid_argument("Concat inputs differ outside the axis: " + x0.shape().to_string() + " vs " +
                                  t->shape().to_string());
      SDX_ASSIGN_OR_RETURN(out_dims[static_cast<size_t>(ax)], checked_add(out_dims[static_cast<size_t>(ax)], t->shape()[ax]),
                           "Concat");
    }
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "Concat output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x0.dtype(), out_shape), "");
    const int64_t outer = out_shape.size_between(0, ax);
    const int64_t out_block = out_shape.size_between(ax, r);
    return dispatch_storage(x0.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* py = y.data<T>();
      auto copy_rows = [&](int64_t begin, int64_t end) {
        int64_t col = 0;
        for (const Tensor* t : xs) {
          const int64_t block = t->shape().size_between(ax, r);
          const T* px = t->data<T>();
          for (int64_t o = begin; o < end; ++o) copy_n(px + o * block, block, py + o * out_block + col);
          col += block;
        }
      };
      // Large outputs (a KV cache growing by one step) are copied by the pool, in runs of outer
      // rows of at least half kParallelCopyMinBytes; one row (axis 0) by parallel_copy per input.
      const auto row_bytes = static_cast<size_t>(out_block) * sizeof(T);
      if (outer == 1 && std::is_trivially_copyable_v<T>) {
        int64_t col = 0;
        for (const Tensor* t : xs) {
          const int64_t block = t->shape().size_between(ax, r);
          parallel_copy(py + col, t->data<T>(), static_cast<size_t>(block) * sizeof(T));
          col += block;
        }
      } else if (row_bytes * static_cast<size_t>(outer) >= kParallelCopyMinBytes) {
        const auto grain = static_cast<int64_t>(kParallelCopyMinBytes / 2 / std::max<size_t>(row_bytes, 1));
        parallel_for(outer, std::max<int64_t>(grain, 1), copy_rows);
      } else {
        copy_rows(0, outer);
      }
      return Status::ok();
    }, "Concat");
  }

  Result<std::unique_ptr<backend::BoundKernel>> prepare(const backend::PrepareContext& ctx) const override {
    if (!ctx.wants_output(0)) return std::unique_ptr<backend::BoundKernel>();
    const Tensor& y = ctx.output(0);
    if (y.dtype() == DType::kString || dtype_bits(y.dtype()) % 8 != 0 || y.rank() == 0 || !y.raw_data())
      return std::unique_ptr<backend::BoundKernel>();
    const int r = y.rank();
    auto ax = normalize_axis(axis_, r);
    if (!ax.is_ok()) return std::unique_ptr<backend::BoundKernel>();
    const int a = ax.value();
    const size_t elem = static_cast<size_t>(dtype_bits(y.dtype()) / 8);
    auto bound = std::make_unique<BoundConcat>();
    bound->outer = static_cast<size_t>(y.shape().size_between(0, a));
    bound->out_row = static_cast<size_t>(y.shape().size_between(a, r)) * elem;
    bound->y = static_cast<char*>(y.raw_data());
    int64_t along = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& x = ctx.input(i);
      // Exactly what run() would produce: same type and rank, same dims outside the axis.
      if (x.dtype() != y.dtype() || x.rank() != r) return std::unique_ptr<backend::BoundKernel>();
      for (int d = 0; d < r; ++d)
        if (d != a && x.shape()[d] != y.shape()[d]) return std::unique_ptr<backend::BoundKernel>();
      const size_t row = static_cast<size_t>(x.shape().size_between(a, r)) * elem;
      bound->parts.push_back({static_cast<const char*>(x.raw_data()), row, along * static_cast<size_t>(
                                                                               y.shape().size_between(a + 1, r)) * elem,
                              i, false});
      along += x.shape()[a];
    }
    if (bound->parts.empty() || along != y.shape()[a]) return std::unique_ptr<backend::BoundKernel>();
    return std::unique_ptr<backend::BoundKernel>(std::move(bound));
  }

 private:
  // Concat bound to its buffers: output rows of out_row bytes, each the inputs' rows side by side.
  struct BoundConcat final : backend::BoundKernel {
    struct Part {
      const char* x;
      size_t row;     // bytes of one of x's rows
      size_t offset;  // of x's row within an output row
      int input;
      bool placed;    // written in place by the runtime (adopt_placed_input): not copied
    };
    std::vector<Part> parts;
    char* y = nullptr;
    size_t outer = 0, out_row = 0;

    Status run() const override {
      for (const Part& p : parts)
        if (!p.placed) copy_rows(y + p.offset, out_row, p.x, p.row, p.row, outer);
      return Status::ok();
    }
    bool input_placement(int i, InputPlacement* where) const override {
      for (const Part& p : parts) {
        if (p.input != i) continue;
        *where = InputPlacement{y + p.offset, p.row, outer, out_row};
        return true;
      }
      return false;
    }
    void adopt_placed_input(int i) override {
      for (Part& p : parts)
        if (p.input == i) p.placed = true;
    }
  };

  int64_t axis_ = 1;
};
const backend::KernelRegistrar kConcat({"Concat", "", 1, backend::kAnyOpset, backend::kernel_factory<ConcatKernel>()});

// ---- Split: sizes from input 1 / attribute 'split', else num_outputs (opset 18, last chunk
// smaller) or equal parts over the node's outputs.
class SplitKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 0);
    if (node.attr("split")) {
      split_attr_ = node.attr_ints("split");
      has_split_attr_ = true;
    }
    num_outputs_ = node.attr_int("num_outputs", 0);
    if (node.attr("num_outputs") && num_outputs_ != node.num_outputs())
      return invalid_argument("Split num_outputs " + std::to_string(num_outputs_) + " differs from the node's " +
                              std::to_string(node.num_outputs()) + " outputs");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, r), "Split axis");
    const int64_t dim = x.shape()[ax];
    const int nout = ctx.num_outputs();
    std::vector<int64_t> sizes;
    if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
      SDX_ASSIGN_OR_RETURN(sizes, read_int64s(ctx.input(1), "Split split"), "");
    } else if (has_split_attr_) {
      sizes = split_attr_;
    } else if (num_outputs_ > 0) {
      const int64_t chunk = (dim + num_outputs_ - 1) / num_outputs_;
      for (int i = 0; i < nout; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
    } else {
      if (dim % nout != 0)
        return invalid_argument("Split cannot divide axis of size " + std::to_string(dim) + " into " + std::to_string(nout) +
                                " equal parts");
      sizes.assign(static_cast<size_t>(nout), dim / nout);
    }
    if (static_cast<int>(sizes.size()) != nout)
      return invalid_argument("Split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(nout) + " outputs");
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) return invalid_argument("Split sizes must not be negative: " + dims_to_string(sizes));
      total += s;
    }
    if (total != dim)
      return invalid_argument("Split sizes " + dims_to_string(sizes) + " do not add up to the axis size " + std::to_string(dim));
    const int64_t outer = x.shape().size_between(0, ax);
    const int64_t inner = x.shape().size_between(ax + 1, r);
    const int64_t in_block = dim * inner;
    int64_t offset = 0;
    for (int i = 0; i < nout; ++i) {
      const int64_t s = sizes[static_cast<size_t>(i)];
      if (ctx.wants_output(i)) {
        std::vector<int64_t> dims = x.shape().dims();
        dims[static_cast<size_t>(ax)] = s;
        SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(i, x.dtype(), Shape(dims)), "");
        SDX_RETURN_IF_ERROR(dispatch_storage(x.dtype(), [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          for (int64_t o = 0; o < outer; ++o) copy_n(px + o * in_block + offset * inner, s * inner, py + o * s * inner);
          return Status::ok();
        }, "Split"), "");
      }
      offset += s;
    }
    return Status::ok();
  }

  // Bound to the frozen outputs, whose shapes (recorded from run() during warmup) give the sizes: split
  // sizes fed as an input must be a constant.
  Result<std::unique_ptr<backend::BoundKernel>> prepare(const backend::PrepareContext& ctx) const override {
    if (!ctx.has_input(0) || (ctx.num_inputs() > 1 && ctx.has_input(1) && !ctx.input_is_constant(1)))
      return std::unique_ptr<backend::BoundKernel>();
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    if (r == 0 || x.dtype() == DType::kString || dtype_bits(x.dtype()) % 8 != 0 || !x.raw_data())
      return std::unique_ptr<backend::BoundKernel>();
    auto ax = normalize_axis(axis_, r);
    if (!ax.is_ok()) return std::unique_ptr<backend::BoundKernel>();
    const int a = ax.value();
    const size_t elem = static_cast<size_t>(dtype_bits(x.dtype()) / 8);
    auto bound = std::make_unique<BoundSplit>();
    bound->x = static_cast<const char*>(x.raw_data());
    bound->outer = static_cast<size_t>(x.shape().size_between(0, a));
    bound->in_row = static_cast<size_t>(x.shape().size_between(a, r)) * elem;
    const size_t inner = static_cast<size_t>(x.shape().size_between(a + 1, r)) * elem;
    int64_t along = 0;
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      if (!ctx.wants_output(i)) return std::unique_ptr<backend::BoundKernel>();
      const Tensor& y = ctx.output(i);
      if (y.dtype() != x.dtype() || y.rank() != r) return std::unique_ptr<backend::BoundKernel>();
      for (int d = 0; d < r; ++d)
        if (d != a && y.shape()[d] != x.shape()[d]) return std::unique_ptr<backend::BoundKernel>();
      bound->parts.push_back({static_cast<char*>(y.raw_data()), static_cast<size_t>(y.shape()[a]) * inner,
                              static_cast<size_t>(along) * inner});
      along += y.shape()[a];
    }
    if (along != x.shape()[a]) return std::unique_ptr<backend::BoundKernel>();
    return std::unique_ptr<backend::BoundKernel>(std::move(bound));
  }

 private:
  // Split bound to its buffers: input rows of in_row bytes, each cut into the outputs' rows.
  struct BoundSplit final : backend::BoundKernel {
    struct Part {
      char* y;
      size_t row;     // bytes of one of y's rows
      size_t offset;  // of y's row within an input row
    };
    std::vector<Part> parts;
    const char* x = nullptr;
    size_t outer = 0, in_row = 0;
    Status run() const override {
      for (const Part& p : parts) copy_rows(p.y, p.row, x + p.offset, in_row, p.row, outer);
      return Status::ok();
    }
  };

  int64_t axis_ = 0;
  int64_t num_outputs_ = 0;
  bool has_split_attr_ = false;
  std::vector<int64_t> split_attr_;
};
const backend::KernelRegistrar kSplit({"Split", "", 1, backend::kAnyOpset, backend::kernel_factory<SplitKernel>()});

// Copies x into an output through a strided view (stride 0 repeats).
Status strided_output(KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& strides,
                      const std::vector<int64_t>& view_dims, const Shape& out_shape) {
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
  return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    strided_copy(x.data<T>(), 0, strides, view_dims, y.data<T>());
    return Status::ok();
  }, ctx.node().op_type());
}

// ---- Tile: output viewed as [r0, d0, r1, d1, ...] reads x with stride 0 over the repeats.
Status tile_run(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  SDX_ASSIGN_OR_RETURN(std::vector<int64_t> reps, read_int64s(ctx.input(1), "Tile repeats"), "");
  const int r = x.rank();
  if (static_cast<int>(reps.size()) != r)
    return invalid_argument("Tile repeats has " + std::to_string(reps.size()) + " values for rank " + std::to_string(r));
  std::vector<int64_t> in_strides = contiguous_strides(x.shape().dims());
  std::vector<int64_t> view_dims, strides, out_dims;
  for (int d = 0; d < r; ++d) {
    const int64_t rep = reps[static_cast<size_t>(d)];
    if (rep < 0) return invalid_argument("Tile repeats must not be negative: " + dims_to_string(reps));
    view_dims.push_back(rep);
    view_dims.push_back(x.shape()[d]);
    strides.push_back(0);
    strides.push_back(in_strides[static_cast<size_t>(d)]);
    SDX_ASSIGN_OR_RETURN(int64_t od, checked_mul(rep, x.shape()[d]), "Tile");
    out_dims.push_back(od);
  }
  SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "Tile output");
  return strided_output(ctx, x, strides, view_dims, out_shape);
}
const backend::KernelRegistrar kTile({"Tile", "", 6, backend::kAnyOpset, backend::function_kernel(tile_run)});

// ---- Expand: bidirectional broadcast of x with the given shape.
Status expand_run(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  SDX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, read_int64s(ctx.input(1), "Expand shape"), "");
  SDX_ASSIGN_OR_RETURN(Shape target, make_shape(dims, "Expand shape"), "");
  SDX_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(x.shape(), target), "Expand");
  const int r = out_shape.rank(), xr = x.rank();
  std::vector<int64_t> in_strides = contiguous_strides(x.shape().dims());
  std::vector<int64_t> strides(static_cast<size_t>(r), 0);
  for (int d = 0; d < xr; ++d) {
    const int od = r - xr + d;
    if (x.shape()[d] != 1 || out_shape[od] == 1) strides[static_cast<size_t>(od)] = in_strides[static_cast<size_t>(d)];
  }
  return strided_output(ctx, x, strides, out_shape.dims(), out_shape);
}
const backend::KernelRegistrar kExpand({"Expand", "", 8, backend::kAnyOpset, backend::function_kernel(expand_run)});

// ---- Compress: keeps the slices along `axis` (or elements of the flattened input) where condition is true.
class CompressKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    has_axis_ = node.attr("axis") != nullptr;
    axis_ = node.attr_int("axis", 0);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& cond = ctx.input(1);
    if (cond.dtype() != DType::kBool || cond.rank() != 1)
      return invalid_argument("Compress condition must be a 1-D bool tensor, got " + cond.type_string());
    int ax = 0;
    Shape xs = x.shape();
    if (has_axis_) {
      SDX_ASSIGN_OR_RETURN(ax, normalize_axis(axis_, x.rank()), "Compress axis");
    } else {
      xs = Shape{x.numel()};
    }
    const int64_t dim = xs[ax];
    const bool* c = cond.data<bool>();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.numel(); ++i) {
      if (!c[i]) continue;
      if (i >= dim)
        return invalid_argument("Compress condition selects index " + std::to_string(i) + " beyond axis size " +
                                std::to_string(dim));
      keep.push_back(i);
    }
    std::vector<int64_t> out_dims = xs.dims();
    out_dims[static_cast<size_t>(ax)] = static_cast<int64_t>(keep.size());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape(out_dims)), "");
    const int64_t outer = xs.size_between(0, ax), inner = xs.size_between(ax + 1, xs.rank());
    return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k : keep) {
          copy_n(px + (o * dim + k) * inner, inner, py);
          py += inner;
        }
      return Status::ok();
    }, "Compress");
  }

 private:
  bool has_axis_ = false;
  int64_t axis_ = 0;
};
const backend::KernelRegistrar kCompress({"Compress", "", 9, backend::kAnyOpset, backend::kernel_factory<CompressKernel>()});

}  // namespace
}  // namespace sdx::cpu
