// Tensor-manipulation kernels that walk along an axis or a matrix:
// CumSum, CumProd (exclusive/reverse), ReverseSequence, Trilu, Col2Im.
#include <algorithm>

#include "core/type_dispatch.h"
#include "backend/cpu/tensor/tensor_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"
#include "ir/op_schema.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

// ---- CumSum / CumProd along the axis given as input 1.
template <bool kProduct>
class CumulativeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    exclusive_ = node.attr_int("exclusive", 0) != 0;
    reverse_ = node.attr_int("reverse", 0) != 0;
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const char* op = kProduct ? "CumProd" : "CumSum";
    SDX_ASSIGN_OR_RETURN(int64_t axis, read_int64_scalar(ctx.input(1), std::string(op) + " axis"), "");
    const int r = x.rank();
    if (r == 0) return invalid_argument(std::string(op) + " input must have rank >= 1");
    SDX_ASSIGN_OR_RETURN(int ax, normalize_axis(axis, r), std::string(op) + " axis");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
    const int64_t outer = x.shape().size_between(0, ax), dim = x.shape()[ax], inner = x.shape().size_between(ax + 1, r);
    return dispatch<SDX_NUMERIC_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      auto load = [](T v) -> C {
        if constexpr (std::is_same_v<T, C>) return v;
        else return v.to_float();
      };
      auto store = [](C v) -> T {
        if constexpr (std::is_same_v<T, C>) return v;
        else return T::from_float(v);
      };
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          C acc = kProduct ? C(1) : C(0);
          for (int64_t s = 0; s < dim; ++s) {
            const int64_t t = reverse_ ? dim - 1 - s : s;
            const int64_t off = (o * dim + t) * inner + i;
            const C v = load(px[off]);
            if (!exclusive_) acc = kProduct ? static_cast<C>(acc * v) : static_cast<C>(acc + v);
            py[off] = store(acc);
            if (exclusive_) acc = kProduct ? static_cast<C>(acc * v) : static_cast<C>(acc + v);
          }
        }
      return Status::ok();
    }, op);
  }

 private:
  bool exclusive_ = false, reverse_ = false;
};
const backend::KernelRegistrar kCumSum({"CumSum", "", 11, backend::kAnyOpset, backend::kernel_factory<CumulativeKernel<false>>()});
const backend::KernelRegistrar kCumProd({"CumProd", "", 26, backend::kAnyOpset, backend::kernel_factory<CumulativeKernel<true>>()});

// ---- ReverseSequence: reverses the first sequence_lens[b] steps of every batch entry.
class ReverseSequenceKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    batch_axis_ = node.attr_int("batch_axis", 1);
    time_axis_ = node.attr_int("time_axis", 0);
    if (!((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0)))
      return invalid_argument("ReverseSequence batch_axis and time_axis must be 0 and 1 in some order");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) return invalid_argument("ReverseSequence input must have rank >= 2, got " + x.type_string());
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> lens, read_int64s(ctx.input(1), "ReverseSequence sequence_lens"), "");
    const int64_t d0 = x.shape()[0], d1 = x.shape()[1], inner = x.shape().size_between(2, x.rank());
    const int64_t batch = batch_axis_ == 0 ? d0 : d1, time = time_axis_ == 0 ? d0 : d1;
    if (static_cast<int64_t>(lens.size()) != batch)
      return invalid_argument("ReverseSequence sequence_lens has " + std::to_string(lens.size()) + " values for batch " +
                              std::to_string(batch));
    for (int64_t l : lens)
      if (l < 0 || l > time)
        return invalid_argument("ReverseSequence length " + std::to_string(l) + " is outside [0, " + std::to_string(time) + "]");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
    return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i0 = 0; i0 < d0; ++i0)
        for (int64_t i1 = 0; i1 < d1; ++i1) {
          const int64_t b = batch_axis_ == 0 ? i0 : i1, t = time_axis_ == 0 ? i0 : i1;
          const int64_t len = lens[static_cast<size_t>(b)];
          const int64_t st = t < len ? len - 1 - t : t;
          const int64_t s0 = time_axis_ == 0 ? st : i0, s1 = time_axis_ == 0 ? i1 : st;
          copy_n(px + (s0 * d1 + s1) * inner, inner, py + (i0 * d1 + i1) * inner);
        }
      return Status::ok();
    }, "ReverseSequence");
  }

 private:
  int64_t batch_axis_ = 1, time_axis_ = 0;
};
const backend::KernelRegistrar kReverseSequence(
    {"ReverseSequence", "", 10, backend::kAnyOpset, backend::kernel_factory<ReverseSequenceKernel>()});

// ---- Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims.
class TriluKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    upper_ = node.attr_int("upper", 1) != 0;
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) return invalid_argument("Trilu input must have rank >= 2, got " + x.type_string());
    int64_t k = 0;
    if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
      SDX_ASSIGN_OR_RETURN(k, read_int64_scalar(ctx.input(1), "Trilu k"), "");
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "");
    const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
    const int64_t mats = x.shape().size_between(0, x.rank() - 2);
    return dispatch_storage(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t m = 0; m < mats; ++m)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t off = (m * rows + i) * cols + j;
            const bool keep = upper_ ? (j - i >= k) : (j - i <= k);
            py[off] = keep ? px[off] : T{};
          }
      return Status::ok();
    }, "Trilu");
  }

 private:
  bool upper_ = true;
};
const backend::KernelRegistrar kTrilu({"Trilu", "", 14, backend::kAnyOpset, backend::kernel_factory<TriluKernel>()});

// ---- Col2Im: sums sliding blocks [N, C*prod(block), L] back into an image [N, C, *image_shape].
class Col2ImKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    dilations_ = node.attr_ints("dilations");
    pads_ = node.attr_ints("pads");
    strides_ = node.attr_ints("strides");
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> image, read_int64s(ctx.input(1), "Col2Im image_shape"), "");
    SDX_ASSIGN_OR_RETURN(std::vector<int64_t> block, read_int64s(ctx.input(2), "Col2Im block_shape"), "");
    const size_t nd = image.size();
    if (nd == 0 || block.size() != nd) return invalid_argument("Col2Im image_shape and block_shape must have equal length >= 1");
    std::vector<int64_t> dil = dilations_.empty() ? std::vector<int64_t>(nd, 1) : dilations_;
    std::vector<int64_t> str = strides_.empty() ? std::vector<int64_t>(nd, 1) : strides_;
    std::vector<int64_t> pads = pads_.empty() ? std::vector<int64_t>(2 * nd, 0) : pads_;
    if (dil.size() != nd || str.size() != nd || pads.size() != 2 * nd)
      return invalid_argument("Col2Im dilations/strides/pads do not match " + std::to_string(nd) + " spatial dims");
    if (x.rank() != 3) return invalid_argument("Col2Im input must be 3-D, got " + x.type_string());
    int64_t block_size = 1, blocks = 1;
    std::vector<int64_t> nblk(nd);
    for (size_t d = 0; d < nd; ++d) {
      constexpr int64_t kMax = int64_t{1} << 31;
      if (image[d] < 0 || block[d] < 1 || dil[d] < 1 || str[d] < 1 || image[d] > kMax || block[d] > kMax ||
          dil[d] > kMax || str[d] > kMax || pads[d] < 0 || pads[nd + d] < 0 || pads[d] > kMax || pads[nd + d] > kMax)
        return invalid_argument("Col2Im image/block/dilation/stride/pad values are out of range");
      SDX_ASSIGN_OR_RETURN(block_size, checked_mul(block_size, block[d]), "Col2Im block_shape");
      const int64_t span = image[d] + pads[d] + pads[nd + d] - (dil[d] * (block[d] - 1) + 1);
      nblk[d] = span < 0 ? 0 : span / str[d] + 1;
      SDX_ASSIGN_OR_RETURN(blocks, checked_mul(blocks, nblk[d]), "Col2Im");
    }
    const int64_t n = x.shape()[0];
    if (x.shape()[1] % block_size != 0 || x.shape()[2] != blocks)
      return invalid_argument("Col2Im input " + x.shape().to_string() + " does not match block_shape " + dims_to_string(block) +
                              " and " + std::to_string(blocks) + " blocks");
    const int64_t c = x.shape()[1] / block_size;
    std::vector<int64_t> out_dims{n, c};
    for (int64_t v : image) out_dims.push_back(v);
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "Col2Im output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
    const int64_t image_size = out_shape.size_between(2, out_shape.rank());
    return dispatch<SDX_FLOAT_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      std::vector<double> acc(static_cast<size_t>(n * c * image_size), 0.0);
      std::vector<int64_t> kpos(nd), bpos(nd);
      for (int64_t nc = 0; nc < n * c; ++nc)
        for (int64_t kb = 0; kb < block_size; ++kb) {
          int64_t rem = kb;
          for (size_t d = nd; d-- > 0;) {
            kpos[d] = rem % block[d];
            rem /= block[d];
          }
          const T* row = px + (nc * block_size + kb) * blocks;
          for (int64_t l = 0; l < blocks; ++l) {
            int64_t lr = l, off = 0;
            bool inside = true;
            for (size_t d = nd; d-- > 0;) {
              bpos[d] = lr % nblk[d];
              lr /= nblk[d];
            }
            for (size_t d = 0; d < nd; ++d) {
              const int64_t p = bpos[d] * str[d] - pads[d] + kpos[d] * dil[d];
              if (p < 0 || p >= image[d]) {
                inside = false;
                break;
              }
              off = off * image[d] + p;
            }
            if (!inside) continue;
            if constexpr (std::is_same_v<T, double>) acc[static_cast<size_t>(nc * image_size + off)] += row[l];
            else acc[static_cast<size_t>(nc * image_size + off)] += to_f32(row[l]);
          }
        }
      T* py = y.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) {
        if constexpr (std::is_same_v<T, double>) py[i] = acc[i];
        else py[i] = from_f32<T>(static_cast<float>(acc[i]));
      }
      return Status::ok();
    }, "Col2Im");
  }

 private:
  std::vector<int64_t> dilations_, pads_, strides_;
};
const backend::KernelRegistrar kCol2Im({"Col2Im", "", 18, backend::kAnyOpset, backend::kernel_factory<Col2ImKernel>()});

}  // namespace
}  // namespace sdx::cpu
