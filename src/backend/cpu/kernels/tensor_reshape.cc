// Tensor-manipulation kernels that change the shape or the element order only:
// Reshape, Flatten, Squeeze, Unsqueeze (views, no copy), Transpose, DepthToSpace, SpaceToDepth.
#include <algorithm>
#include <numeric>

#include "backend/cpu/kernels/util/bound_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/tensor/permute.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// ---- Reshape: shape from input 1 (attribute 'shape' before opset 5); 0 copies the input dim
// unless allowzero, one -1 is inferred.
class ReshapeKernel final : public backend::Kernel {
 public:
  bool is_view() const override { return true; }
  Status init(const ir::Node& node) override {
    allowzero_ = node.attr_int("allowzero", 0) != 0;
    if (node.opset() < 5) {
      attr_shape_ = node.attr_ints("shape");
      use_attr_ = true;
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> spec = attr_shape_;
    if (!use_attr_) {
      if (!ctx.has_input(1)) return invalid_argument("Reshape needs a shape input");
      SDX_ASSIGN_OR_RETURN(spec, read_int64s(ctx.input(1), "Reshape shape"), "");
    }
    std::vector<int64_t> dims(spec.size());
    int infer_at = -1;
    int64_t known = 1;
    for (size_t i = 0; i < spec.size(); ++i) {
      int64_t d = spec[i];
      if (d == 0 && !allowzero_) {
        if (static_cast<int>(i) >= x.rank())
          return invalid_argument("Reshape shape has 0 at position " + std::to_string(i) + " beyond the input rank " +
                                  std::to_string(x.rank()));
        d = x.shape()[static_cast<int>(i)];
      } else if (d == -1) {
        if (infer_at >= 0) return invalid_argument("Reshape shape has more than one -1: " + dims_to_string(spec));
        infer_at = static_cast<int>(i);
        dims[i] = -1;
        continue;
      } else if (d < 0) {
        return invalid_argument("Reshape shape has an invalid dimension: " + dims_to_string(spec));
      }
      dims[i] = d;
      SDX_ASSIGN_OR_RETURN(known, checked_mul(known, d), "Reshape shape");
    }
    if (infer_at >= 0) {
      if (known == 0) {
        if (x.numel() != 0) return invalid_argument("Reshape cannot infer -1 with a zero-sized target " + dims_to_string(spec));
        dims[static_cast<size_t>(infer_at)] = 0;
      } else {
        if (x.numel() % known != 0)
          return invalid_argument("Reshape cannot reshape " + x.shape().to_string() + " to " + dims_to_string(spec));
        dims[static_cast<size_t>(infer_at)] = x.numel() / known;
      }
    }
    SDX_ASSIGN_OR_RETURN(Shape shape, make_shape(dims, "Reshape shape"), "");
    if (shape.numel() != x.numel())
      return invalid_argument("Reshape cannot reshape " + x.shape().to_string() + " to " + dims_to_string(spec));
    return ctx.set_output(0, x.reshaped(shape));
  }

 private:
  bool allowzero_ = false;
  bool use_attr_ = false;
  std::vector<int64_t> attr_shape_;
};
const backend::KernelRegistrar kReshape({"Reshape", "", 1, backend::kAnyOpset, backend::kernel_factory<ReshapeKernel>()});

// ---- Flatten: [d0..d(axis-1)] x [d(axis)..] as 2-D.
class FlattenKernel final : public backend::Kernel {
 public:
  bool is_view() const override { return true; }
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 1);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    if (axis < 0 || axis > x.rank())
      return invalid_argument("Flatten axis " + std::to_string(axis_) + " is out of range for rank " + std::to_string(x.rank()));
    int a = static_cast<int>(axis);
    int64_t outer = x.shape().size_between(0, a);
    int64_t inner = x.shape().size_between(a, x.rank());
    return ctx.set_output(0, x.reshaped(Shape{outer, inner}));
  }

 private:
  int64_t axis_ = 1;
};
const backend::KernelRegistrar kFlatten({"Flatten", "", 1, backend::kAnyOpset, backend::kernel_factory<FlattenKernel>()});

// Axes from attribute (old opsets) or optional input 1 (opset 13+).
struct AxesSource {
  bool from_input = false;
  bool given = false;
  std::vector<int64_t> attr;
  void init(const ir::Node& node) {
    from_input = node.opset() >= 13;
    if (!from_input && node.attr("axes")) {
      attr = node.attr_ints("axes");
      given = true;
    }
  }
  Result<std::vector<int64_t>> get(KernelContext& ctx, bool& present) const {
    if (from_input) {
      present = ctx.has_input(1);
      if (!present) return std::vector<int64_t>{};
      return read_int64s(ctx.input(1), std::string(ctx.node().op_type()) + " axes");
    }
    present = given;
    return attr;
  }
};

// ---- Squeeze: removes the listed size-1 axes, or all of them.
class SqueezeKernel final : public backend::Kernel {
 public:
  bool is_view() const override { return true; }
  Status init(const ir::Node& node) override {
    axes_.init(node);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    bool present = false;
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_.get(ctx, present), "");
    std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
    if (!present) {
      for (int i = 0; i < x.rank(); ++i) drop[static_cast<size_t>(i)] = x.shape()[i] == 1;
    } else {
      for (int64_t a : axes) {
        SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(a, x.rank()), "Squeeze axes");
        if (x.shape()[ax] != 1)
          return invalid_argument("Squeeze axis " + std::to_string(a) + " has size " + std::to_string(x.shape()[ax]) +
                                  ", not 1, in " + x.shape().to_string());
        drop[static_cast<size_t>(ax)] = true;
      }
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < x.rank(); ++i)
      if (!drop[static_cast<size_t>(i)]) dims.push_back(x.shape()[i]);
    return ctx.set_output(0, x.reshaped(Shape(dims)));
  }

 private:
  AxesSource axes_;
};
const backend::KernelRegistrar kSqueeze({"Squeeze", "", 1, backend::kAnyOpset, backend::kernel_factory<SqueezeKernel>()});

// ---- Unsqueeze: inserts size-1 axes at the listed output positions.
class UnsqueezeKernel final : public backend::Kernel {
 public:
  bool is_view() const override { return true; }
  Status init(const ir::Node& node) override {
    axes_.init(node);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    bool present = false;
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_.get(ctx, present), "");
    if (!present) return invalid_argument("Unsqueeze needs axes");
    const int out_rank = x.rank() + static_cast<int>(axes.size());
    std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
    for (int64_t a : axes) {
      SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(a, out_rank), "Unsqueeze axes");
      if (is_new[static_cast<size_t>(ax)]) return invalid_argument("Unsqueeze axes repeat axis " + std::to_string(a));
      is_new[static_cast<size_t>(ax)] = true;
    }
    std::vector<int64_t> dims;
    int src = 0;
    for (int i = 0; i < out_rank; ++i) dims.push_back(is_new[static_cast<size_t>(i)] ? 1 : x.shape()[src++]);
    return ctx.set_output(0, x.reshaped(Shape(dims)));
  }

 private:
  AxesSource axes_;
};
const backend::KernelRegistrar kUnsqueeze({"Unsqueeze", "", 1, backend::kAnyOpset, backend::kernel_factory<UnsqueezeKernel>()});

// A copy that permutes x's elements: out = permute(view(x, view_dims), perm), stored
// contiguously with shape out_shape (same element count, possibly another rank).
struct Permutation {
  std::vector<int64_t> view_dims, perm;
  Shape out_shape;
};

// The permuted walk over x: dims (in output order) and the input stride of each.
void permuted_strides(const Permutation& p, std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  std::vector<int64_t> in_strides = contiguous_strides(p.view_dims);
  dims.resize(p.perm.size());
  strides.resize(p.perm.size());
  for (size_t i = 0; i < p.perm.size(); ++i) {
    dims[i] = p.view_dims[static_cast<size_t>(p.perm[i])];
    strides[i] = in_strides[static_cast<size_t>(p.perm[i])];
  }
}

Status permute_copy(KernelContext& ctx, const Tensor& x, const Permutation& p) {
  std::vector<int64_t> dims, strides;
  permuted_strides(p, dims, strides);
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), p.out_shape), "");
  const PermutePlan plan = PermutePlan::make(dims, strides);
  return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_trivially_copyable_v<T>) permute(plan, x.data<T>(), y.data<T>());
    else strided_copy(x.data<T>(), 0, strides, dims, y.data<T>());  // strings: one thread
    return Status::ok();
  }, ctx.node().op_type());
}

// Bound form of permute_copy (none for strings: copying them allocates).
std::unique_ptr<backend::BoundKernel> prepare_permute_copy(const backend::PrepareContext& ctx, const Tensor& x,
                                                           const Permutation& p) {
  if (x.dtype() == DType::kString || !output_matches(ctx, 0, x.dtype(), p.out_shape)) return no_bound_form();
  std::vector<int64_t> dims, strides;
  permuted_strides(p, dims, strides);
  std::unique_ptr<backend::BoundKernel> bound;
  (void)dispatch_storage(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_trivially_copyable_v<T>) {
          bound = backend::bind_call([src = x.data<T>(), dst = ctx.output(0).data<T>(), plan = PermutePlan::make(dims, strides)] {
            permute(plan, src, dst);
            return Status::ok();
          });
        }
        return Status::ok();
      },
      ctx.node().op_type());
  return bound;
}

// ---- Transpose: perm defaults to reversing the axes.
class TransposeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    if (node.attr("perm")) {
      perm_ = node.attr_ints("perm");
      has_perm_ = true;
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(Permutation p, permutation(x.shape()), "");
    return permute_copy(ctx, x, p);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return no_bound_form();
    Result<Permutation> p = permutation(ctx.input(0).shape());
    if (!p.is_ok()) return no_bound_form();
    return prepare_permute_copy(ctx, ctx.input(0), p.value());
  }

 private:
  Result<Permutation> permutation(const Shape& s) const {
    const int r = s.rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(static_cast<size_t>(r));
      for (int i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = r - 1 - i;
    }
    if (static_cast<int>(perm.size()) != r)
      return invalid_argument("Transpose perm " + dims_to_string(perm) + " does not match input rank " + std::to_string(r));
    std::vector<bool> seen(static_cast<size_t>(r), false);
    std::vector<int64_t> out_dims;
    for (int64_t& p : perm) {
      if (p < 0) p += r;
      if (p < 0 || p >= r || seen[static_cast<size_t>(p)])
        return invalid_argument("Transpose perm " + dims_to_string(perm_) + " is not a permutation of rank " + std::to_string(r));
      seen[static_cast<size_t>(p)] = true;
      out_dims.push_back(s[static_cast<int>(p)]);
    }
    return Permutation{s.dims(), std::move(perm), Shape(out_dims)};
  }

  std::vector<int64_t> perm_;
  bool has_perm_ = false;
};
const backend::KernelRegistrar kTranspose({"Transpose", "", 1, backend::kAnyOpset, backend::kernel_factory<TransposeKernel>()});

// ---- DepthToSpace (DCR/CRD) and SpaceToDepth (DCR, CRD since opset 28): reshape + transpose.
class DepthSpaceKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    to_space_ = node.op_type() == "DepthToSpace";
    bs_ = node.attr_int("blocksize", 0);
    if (bs_ <= 0) return invalid_argument(node.op_type() + " needs a positive 'blocksize'");
    std::string mode = node.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") return invalid_argument(node.op_type() + " mode must be DCR or CRD, got " + mode);
    crd_ = mode == "CRD";
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(Permutation p, permutation(ctx.node().op_type(), x), "");
    return permute_copy(ctx, x, p);
  }
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return no_bound_form();
    Result<Permutation> p = permutation(ctx.node().op_type(), ctx.input(0));
    if (!p.is_ok()) return no_bound_form();
    return prepare_permute_copy(ctx, ctx.input(0), p.value());
  }

 private:
  Result<Permutation> permutation(const std::string& op, const Tensor& x) const {
    if (x.rank() != 4) return invalid_argument(op + " input must be 4-D, got " + x.type_string());
    const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3], b = bs_;
    if (to_space_) {
      if (c % (b * b) != 0)
        return invalid_argument("DepthToSpace channels " + std::to_string(c) + " are not divisible by blocksize^2");
      const int64_t oc = c / (b * b);
      Shape out{n, oc, h * b, w * b};
      if (crd_) return Permutation{{n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out};
      return Permutation{{n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, out};
    }
    if (h % b != 0 || w % b != 0)
      return invalid_argument("SpaceToDepth spatial dims " + x.shape().to_string() + " are not divisible by blocksize");
    Shape out{n, c * b * b, h / b, w / b};
    std::vector<int64_t> view{n, c, h / b, b, w / b, b};
    if (crd_) return Permutation{view, {0, 1, 3, 5, 2, 4}, out};
    return Permutation{view, {0, 3, 5, 1, 2, 4}, out};
  }

  bool to_space_ = true;
  bool crd_ = false;
  int64_t bs_ = 0;
};
const backend::KernelRegistrar kDepthToSpace(
    {"DepthToSpace", "", 1, backend::kAnyOpset, backend::kernel_factory<DepthSpaceKernel>()});
const backend::KernelRegistrar kSpaceToDepth(
    {"SpaceToDepth", "", 1, backend::kAnyOpset, backend::kernel_factory<DepthSpaceKernel>()});

}  // namespace
}  // namespace sdx::cpu
