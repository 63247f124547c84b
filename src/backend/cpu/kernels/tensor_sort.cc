// Tensor-manipulation kernels whose output depends on comparing values:
// TopK (ties by lower index), Unique (sorted/unsorted, optional axis, 4 outputs), NonZero.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// Comparable form of an element: 16-bit floats compare as float.
template <typename T>
auto sort_key(const T& v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return v.to_float();
  else return v;
}

// A strict weak order on sort keys: NaN sorts after every number and equals itself,
// so std::sort never sees an inconsistent comparator.
template <typename K>
bool key_less(const K& a, const K& b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// ---- TopK along `axis`: k largest (or smallest) values and their int64 indices.
class TopKKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", -1);
    largest_ = node.attr_int("largest", 1) != 0;
    if (node.opset() < 10) {
      k_attr_ = node.attr_int("k", -1);
      if (k_attr_ < 0) return invalid_argument("TopK needs a non-negative 'k' attribute");
    }
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int64_t k = k_attr_;
    if (k < 0) {
      if (!ctx.has_input(1)) return invalid_argument("TopK needs a K input");
      SDX_ASSIGN_OR_RETURN(k, read_int64_scalar(ctx.input(1), "TopK K"), "");
    }
    const int r = x.rank();
    if (r == 0) return invalid_argument("TopK input must have rank >= 1");
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, r), "TopK axis");
    const int64_t dim = x.shape()[ax];
    if (k < 0 || k > dim)
      return invalid_argument("TopK K " + std::to_string(k) + " is outside [0, " + std::to_string(dim) + "]");
    std::vector<int64_t> out_dims = x.shape().dims();
    out_dims[static_cast<size_t>(ax)] = k;
    SDX_ASSIGN_OR_RETURN(Tensor values, ctx.allocate_output(0, x.dtype(), Shape(out_dims)), "");
    SDX_ASSIGN_OR_RETURN(Tensor indices, ctx.allocate_output(1, DType::kInt64, Shape(out_dims)), "");
    const int64_t outer = x.shape().size_between(0, ax), inner = x.shape().size_between(ax + 1, r);
    return dispatch<SDX_NUMERIC_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* pv = values.data<T>();
      int64_t* pi = indices.data<int64_t>();
      std::vector<int64_t> order(static_cast<size_t>(dim));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const T* base = px + o * dim * inner + i;
          auto before = [&](int64_t a, int64_t b) {
            auto va = sort_key(base[a * inner]), vb = sort_key(base[b * inner]);
            if (key_less(va, vb)) return !largest_;
            if (key_less(vb, va)) return largest_;
            return a < b;
          };
          std::iota(order.begin(), order.end(), int64_t{0});
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            const int64_t src = order[static_cast<size_t>(j)];
            const int64_t dst = (o * k + j) * inner + i;
            pv[dst] = base[src * inner];
            pi[dst] = src;
          }
        }
      return Status::ok();
    }, "TopK");
  }

 private:
  int64_t axis_ = -1;
  int64_t k_attr_ = -1;
  bool largest_ = true;
};
const backend::KernelRegistrar kTopK({"TopK", "", 1, backend::kAnyOpset, backend::kernel_factory<TopKKernel>()});

// ---- Unique: over elements (no axis) or over slices along `axis`, compared lexicographically.
class UniqueKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    sorted_ = node.attr_int("sorted", 1) != 0;
    has_axis_ = node.attr("axis") != nullptr;
    axis_ = node.attr_int("axis", 0);
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape xs = x.shape();
    int ax = 0;
    if (has_axis_) {
      SDX_ASSIGN_OR_RETURN(ax, normalize_axis(axis_, x.rank()), "Unique axis");
    } else {
      xs = Shape{x.numel()};
    }
    const int64_t outer = xs.size_between(0, ax), n = xs[ax], inner = xs.size_between(ax + 1, xs.rank());
    return dispatch<SDX_NUMERIC_TYPES, bool, std::string>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      // Slice s holds px[(o * n + s) * inner + j] for o < outer, j < inner, in that order.
      auto compare = [&](int64_t a, int64_t b) -> int {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < inner; ++j) {
            auto va = sort_key(px[(o * n + a) * inner + j]), vb = sort_key(px[(o * n + b) * inner + j]);
            if (key_less(va, vb)) return -1;
            if (key_less(vb, va)) return 1;
          }
        return 0;
      };
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
      // Groups of equal slices in sorted order; the first member is the lowest index.
      std::vector<int64_t> group_of(static_cast<size_t>(n)), first, counts;
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || compare(order[i - 1], order[i]) != 0) {
          first.push_back(order[i]);
          counts.push_back(0);
        }
        group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
        ++counts.back();
      }
      const int64_t u = static_cast<int64_t>(first.size());
      // Output position of each group: sorted order, or order of first occurrence.
      std::vector<int64_t> pos(static_cast<size_t>(u));
      std::iota(pos.begin(), pos.end(), int64_t{0});
      if (!sorted_) {
        std::vector<int64_t> by_first(static_cast<size_t>(u));
        std::iota(by_first.begin(), by_first.end(), int64_t{0});
        std::sort(by_first.begin(), by_first.end(),
                  [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
        for (int64_t p = 0; p < u; ++p) pos[static_cast<size_t>(by_first[static_cast<size_t>(p)])] = p;
      }
      std::vector<int64_t> y_dims = xs.dims();
      y_dims[static_cast<size_t>(ax)] = u;
      SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape(y_dims)), "");
      T* py = y.data<T>();
      for (int64_t g = 0; g < u; ++g) {
        const int64_t p = pos[static_cast<size_t>(g)], s = first[static_cast<size_t>(g)];
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < inner; ++j) py[(o * u + p) * inner + j] = px[(o * n + s) * inner + j];
      }
      if (ctx.num_outputs() > 1 && ctx.wants_output(1)) {
        SDX_ASSIGN_OR_RETURN(Tensor t, ctx.allocate_output(1, DType::kInt64, Shape{u}), "");
        for (int64_t g = 0; g < u; ++g) t.data<int64_t>()[pos[static_cast<size_t>(g)]] = first[static_cast<size_t>(g)];
      }
      if (ctx.num_outputs() > 2 && ctx.wants_output(2)) {
        SDX_ASSIGN_OR_RETURN(Tensor t, ctx.allocate_output(2, DType::kInt64, Shape{n}), "");
        for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = pos[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
      }
      if (ctx.num_outputs() > 3 && ctx.wants_output(3)) {
        SDX_ASSIGN_OR_RETURN(Tensor t, ctx.allocate_output(3, DType::kInt64, Shape{u}), "");
        for (int64_t g = 0; g < u; ++g) t.data<int64_t>()[pos[static_cast<size_t>(g)]] = counts[static_cast<size_t>(g)];
      }
      return Status::ok();
    }, "Unique");
  }

 private:
  bool sorted_ = true;
  bool has_axis_ = false;
  int64_t axis_ = 0;
};
const backend::KernelRegistrar kUnique({"Unique", "", 11, backend::kAnyOpset, backend::kernel_factory<UniqueKernel>()});

// ---- NonZero: int64 [rank, count] coordinates of the non-zero elements, row-major order.
Status nonzero_run(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  return dispatch<SDX_NUMERIC_TYPES, bool, std::string>(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    auto nonzero = [](const T& v) {
      if constexpr (std::is_same_v<T, std::string>) return !v.empty();
      else return sort_key(v) != decltype(sort_key(v)){};
    };
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < x.numel(); ++i)
      if (nonzero(px[i])) hits.push_back(i);
    const int64_t cnt = static_cast<int64_t>(hits.size());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kInt64, Shape{r, cnt}), "");
    int64_t* py = y.data<int64_t>();
    for (int64_t h = 0; h < cnt; ++h) {
      int64_t rem = hits[static_cast<size_t>(h)];
      for (int d = r - 1; d >= 0; --d) {
        py[d * cnt + h] = rem % x.shape()[d];
        rem /= x.shape()[d];
      }
    }
    return Status::ok();
  }, "NonZero");
}
const backend::KernelRegistrar kNonZero({"NonZero", "", 9, backend::kAnyOpset, backend::function_kernel(nonzero_run)});

}  // namespace
}  // namespace sdx::cpu
