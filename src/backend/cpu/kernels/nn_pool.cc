// Pooling over N spatial dims: AveragePool, MaxPool (with Indices), LpPool, the Global*
// pools and MaxUnpool.
//
// Windowed pools build one table per run: for each (kernel offset, output position) the
// flat input spatial index, or -1 for padding. Every (n, c) plane then reduces through
// the table with contiguous inner loops over output positions. Float32 2-D MaxPool (without
// Indices) and AveragePool run on oneDNN when it is built in (onednn_pool.h), with a bound form.
// sdx.BlockedMaxPool / sdx.BlockedAveragePool are the same pools on channel-blocked float32 4-D
// tensors (NCHW16c in and out, ConvLayoutOptimizations): oneDNN reads them as they are; the
// reference converts to and from NCHW around the same computation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/kernels/util/conv_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/onednn/onednn_pool.h"
#include "backend/cpu/simd/vector_ops.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

enum class PoolKind { kAverage, kMax, kLp };

// LpPool's p: a float attribute in opset 1, an int since opset 2.
double read_p(const ir::Node& node) {
  const ir::Attribute* a = node.attr("p");
  if (a && a->type == ir::AttrType::kFloat) return static_cast<double>(a->f);
  return static_cast<double>(node.attr_int("p", 2));
}

// Visits every (kernel offset k, output position o) of a resolved geometry:
// fn(k, o, pos) with pos the per-dim input coordinates (may lie in padding).
template <typename F>
void for_each_window_position(const WindowGeometry& g, F&& fn) {
  const int n = g.rank();
  const int64_t ks = product(g.kernel), os = product(g.out);
  std::vector<int64_t> kk(static_cast<size_t>(n), 0), p(static_cast<size_t>(n), 0), pos(static_cast<size_t>(n));
  for (int64_t k = 0; k < ks; ++k) {
    std::fill(p.begin(), p.end(), 0);
    for (int64_t o = 0; o < os; ++o) {
      for (int d = 0; d < n; ++d) pos[d] = p[d] * g.strides[d] - g.pads[d] + kk[d] * g.dilations[d];
      fn(k, o, pos);
      for (int d = n - 1; d >= 0; --d) {
        if (++p[d] < g.out[d]) break;
        p[d] = 0;
      }
    }
    for (int d = n - 1; d >= 0; --d) {
      if (++kk[d] < g.kernel[d]) break;
      kk[d] = 0;
    }
  }
}

class PoolKernel final : public backend::Kernel {
 public:
  // blocked: X and Y channel-blocked (sdx.Blocked*Pool).
  explicit PoolKernel(PoolKind kind, bool blocked = false) : kind_(kind), blocked_(blocked) {}

  Status init(const ir::Node& node) override {
    SDX_ASSIGN_OR_RETURN(auto_pad_, parse_auto_pad(node.attr_string("auto_pad", "NOTSET")), "auto_pad");
    geom_.kernel = node.attr_ints("kernel_shape");
    if (geom_.kernel.empty()) return invalid_argument("kernel_shape is required");
    SDX_RETURN_IF_ERROR(geom_.read_attrs(node), "");
    ceil_mode_ = node.attr_int("ceil_mode", 0) != 0;
    count_include_pad_ = node.attr_int("count_include_pad", 0) != 0;
    storage_order_ = node.attr_int("storage_order", 0);
    if (storage_order_ != 0 && storage_order_ != 1) return invalid_argument("storage_order must be 0 or 1");
    p_ = read_p(node);
    if (kind_ == PoolKind::kLp && p_ <= 0) return invalid_argument("p must be positive");
    return Status::ok();
  }

  // The resolved window geometry and output shape for input shape xs.
  Status resolve(const Shape& xs, WindowGeometry& g, Shape& out_shape) const {
    const int n = geom_.rank();
    if (xs.rank() != n + 2) {
      return invalid_argument("input " + xs.to_string() + " must have rank " + std::to_string(n + 2) +
                              " for kernel_shape " + dims_to_string(geom_.kernel));
    }
    g = geom_;
    const std::vector<int64_t> in(xs.dims().begin() + 2, xs.dims().end());
    SDX_RETURN_IF_ERROR(g.resolve(in, auto_pad_, ceil_mode_), "");
    std::vector<int64_t> out_dims = {xs[0], xs[1]};
    out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
    SDX_ASSIGN_OR_RETURN(out_shape, Shape::make(out_dims), "output");
    return Status::ok();
  }

  // The oneDNN pooling for this float32 input, or null (see onednn_pool.h for what it declines).
  std::unique_ptr<OneDnnPool> onednn_pool(const Tensor& x, const WindowGeometry& g) const {
    if (x.dtype() != DType::kFloat32 || kind_ == PoolKind::kLp) return nullptr;
    const std::vector<int64_t> in(x.shape().dims().begin() + 2, x.shape().dims().end());
    return OneDnnPool::make(kind_ == PoolKind::kMax ? OneDnnPool::Kind::kMax : OneDnnPool::Kind::kAverage, g, in,
                            x.shape()[0] * x.shape()[1], count_include_pad_, blocked_);
  }

  // Blocked pools: float32, 4-D, a multiple of 16 channels.
  Status check_blocked(const Tensor& x) const {
    if (!blocked_) return Status::ok();
    if (x.dtype() != DType::kFloat32 || x.rank() != 4 || x.shape()[1] % kChannelBlock != 0)
      return invalid_argument("a channel-blocked pool needs a float32 4-D input with a multiple of 16 channels, got " +
                              x.type_string());
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WindowGeometry g;
    Shape out_shape;
    SDX_RETURN_IF_ERROR(check_blocked(x), "");
    SDX_RETURN_IF_ERROR(resolve(x.shape(), g, out_shape), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
    Tensor indices;
    const bool want_idx = kind_ == PoolKind::kMax && ctx.num_outputs() > 1 && ctx.wants_output(1);
    if (want_idx) {
      SDX_ASSIGN_OR_RETURN(indices, ctx.allocate_output(1, DType::kInt64, out_shape), "Indices");
    }
    if (y.numel() == 0) return Status::ok();
    if (!want_idx) {
      if (std::unique_ptr<OneDnnPool> pool = onednn_pool(x, g)) {
        return pool->run(x.data<float>(), y.data<float>());
      }
    }
    if (!blocked_) return reference(x, g, y, want_idx ? &indices : nullptr);
    // Channel-blocked: the NCHW reference between two reorders.
    const int64_t N = x.shape()[0], C = x.shape()[1];
    SDX_ASSIGN_OR_RETURN(Tensor xn, Tensor::allocate(DType::kFloat32, x.shape()), "");
    SDX_ASSIGN_OR_RETURN(Tensor yn, Tensor::allocate(DType::kFloat32, out_shape), "");
    unblock_channels(x.data<float>(), xn.data<float>(), N, C, x.shape()[2] * x.shape()[3]);
    SDX_RETURN_IF_ERROR(reference(xn, g, yn, nullptr), "");
    block_channels(yn.data<float>(), y.data<float>(), N, C, out_shape[2] * out_shape[3]);
    return Status::ok();
  }

  // The reference pooling of x (NCHW) into y (and indices when given), g resolved for x.
  Status reference(const Tensor& x, const WindowGeometry& g, Tensor& y, Tensor* indices_out) const {
    const int n = geom_.rank();
    const std::vector<int64_t> in(x.shape().dims().begin() + 2, x.shape().dims().end());
    const bool want_idx = indices_out != nullptr;
    Tensor& indices = want_idx ? *indices_out : y;

    // Input spatial index per (kernel offset, output), -1 in padding; plus the divisor per
    // output (average) and, for Indices, the column-major index when storage_order is 1.
    const int64_t ks = product(g.kernel), os = product(g.out), is = product(in);
    std::vector<int64_t> table(static_cast<size_t>(ks * os));
    std::vector<int64_t> count(static_cast<size_t>(os), 0);
    std::vector<int64_t> col_major;
    if (want_idx && storage_order_ == 1) col_major.resize(table.size());
    for_each_window_position(g, [&](int64_t k, int64_t o, const std::vector<int64_t>& pos) {
      int64_t flat = 0, cm = 0, cm_stride = 1;
      bool inside = true, counted = true;
      for (int d = 0; d < n; ++d) {
        if (pos[d] < 0 || pos[d] >= in[d]) inside = false;
        if (pos[d] >= in[d] + g.pads[d + n]) counted = false;  // beyond the pads (ceil_mode)
        flat = flat * in[d] + pos[d];
        cm += pos[d] * cm_stride;
        cm_stride *= in[d];
      }
      table[k * os + o] = inside ? flat : -1;
      if (!col_major.empty()) col_major[k * os + o] = cm;
      if (count_include_pad_ ? counted : inside) ++count[o];
    });

    return dispatch<float, double, Float16, BFloat16, int8_t, uint8_t>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_integral_v<T>) {
            if (kind_ != PoolKind::kMax) return unimplemented("integer inputs are supported by MaxPool only");
          }
          using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
          const T* xp = x.data<T>();
          T* yp = y.data<T>();
          int64_t* ip = want_idx ? indices.data<int64_t>() : nullptr;
          std::vector<Acc> acc(static_cast<size_t>(os));
          std::vector<int64_t> arg(static_cast<size_t>(os));
          const int64_t planes = x.shape()[0] * x.shape()[1];
          for (int64_t pl = 0; pl < planes; ++pl) {
            const T* xc = xp + pl * is;
            if (kind_ == PoolKind::kMax) {
              std::fill(acc.begin(), acc.end(), -std::numeric_limits<Acc>::infinity());
              std::fill(arg.begin(), arg.end(), -1);
            } else {
              std::fill(acc.begin(), acc.end(), Acc(0));
            }
            for (int64_t k = 0; k < ks; ++k) {
              const int64_t* t = table.data() + k * os;
              for (int64_t o = 0; o < os; ++o) {
                if (t[o] < 0) continue;
                const Acc v = static_cast<Acc>(to_f32(xc[t[o]]));
                if (kind_ == PoolKind::kMax) {
                  if (v > acc[o] || arg[o] < 0) {
                    acc[o] = v;
                    arg[o] = k * os + o;
                  }
                } else if (kind_ == PoolKind::kAverage) {
                  acc[o] += v;
                } else {
                  acc[o] += static_cast<Acc>(std::pow(std::abs(v), p_));
                }
              }
            }
            T* yc = yp + pl * os;
            for (int64_t o = 0; o < os; ++o) {
              Acc r = acc[o];
              if (kind_ == PoolKind::kAverage) r = r / static_cast<Acc>(count[o]);
              if (kind_ == PoolKind::kLp) r = static_cast<Acc>(std::pow(r, 1.0 / p_));
              if constexpr (std::is_integral_v<T>) {
                // A window entirely in padding leaves -inf: saturate instead of an undefined cast.
                r = std::clamp(r, static_cast<Acc>(std::numeric_limits<T>::lowest()),
                               static_cast<Acc>(std::numeric_limits<T>::max()));
                yc[o] = static_cast<T>(r);
              } else if constexpr (std::is_same_v<T, double>) {
                yc[o] = r;
              } else {
                yc[o] = from_f32<T>(static_cast<float>(r));
              }
              if (ip) {
                const int64_t a = arg[o];
                ip[pl * os + o] = a < 0 ? -1 : pl * is + (col_major.empty() ? table[a] : col_major[a]);
              }
            }
          }
          return Status::ok();
        },
        "pool");
  }

  // The oneDNN path only (the reference path has no bound form: replay runs it through run()).
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!ctx.has_input(0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    WindowGeometry g;
    Shape out_shape;
    if (!resolve(x.shape(), g, out_shape).is_ok() || out_shape.numel() == 0) return no_bound_form();
    if (!output_matches(ctx, 0, x.dtype(), out_shape) || (ctx.num_outputs() > 1 && ctx.wants_output(1)) ||
        !check_blocked(x).is_ok())
      return no_bound_form();
    std::unique_ptr<OneDnnPool> pool = onednn_pool(x, g);
    if (!pool) return no_bound_form();
    return backend::bind_call(
        [pool = std::move(pool), px = x.data<float>(), py = ctx.output(0).data<float>()] {
          return pool->run(px, py);
        });
  }

 private:
  PoolKind kind_;
  bool blocked_ = false;
  AutoPad auto_pad_ = AutoPad::kNotSet;
  WindowGeometry geom_;
  bool ceil_mode_ = false, count_include_pad_ = false;
  int64_t storage_order_ = 0;
  double p_ = 2;
};

class GlobalPoolKernel final : public backend::Kernel {
 public:
  explicit GlobalPoolKernel(PoolKind kind) : kind_(kind) {}

  Status init(const ir::Node& node) override {
    p_ = read_p(node);
    if (kind_ == PoolKind::kLp && p_ <= 0) return invalid_argument("p must be positive");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) return invalid_argument("input must have rank >= 2, got " + x.shape().to_string());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape(x)), "");
    return compute(x, y);
  }

  // The same computation bound to the frozen input and output (no allocation, no shape work per call).
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (!ctx.has_input(0) || ctx.input(0).rank() < 2) return no_bound_form();
    const Tensor& x = ctx.input(0);
    if (!output_matches(ctx, 0, x.dtype(), out_shape(x))) return no_bound_form();
    return backend::bind_call([this, x, y = ctx.output(0)] { return compute(x, y); });
  }

 private:
  static Shape out_shape(const Tensor& x) {
    std::vector<int64_t> out_dims(static_cast<size_t>(x.rank()), 1);
    out_dims[0] = x.shape()[0];
    out_dims[1] = x.shape()[1];
    return Shape(out_dims);
  }

  Status compute(const Tensor& x, const Tensor& y) const {
    const int64_t planes = x.shape()[0] * x.shape()[1];
    const int64_t is = x.shape().size_between(2, x.rank());
    return dispatch<float, double, Float16, BFloat16, int8_t, uint8_t>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_integral_v<T>) {
            if (kind_ != PoolKind::kMax) return unimplemented("integer inputs are supported by GlobalMaxPool only");
          }
          using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
          const T* xp = x.data<T>();
          T* yp = y.data<T>();
          if constexpr (std::is_same_v<T, float>) {
            // float32 average and max: a plane per row of the vector kernels (the sum in double, the
            // max with the row's first NaN, as np.max), planes split over the pool.
            if (kind_ != PoolKind::kLp) {
              const bool avg = kind_ == PoolKind::kAverage;
              parallel_for(planes, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, is)),
                           [&](int64_t b, int64_t e) {
                             for (int64_t pl = b; pl < e; ++pl)
                               yp[pl] = avg ? static_cast<float>(simd::row_sum(xp + pl * is, is) / static_cast<double>(is))
                                            : simd::row_max(xp + pl * is, is);
                           });
              return Status::ok();
            }
          }
          for (int64_t pl = 0; pl < planes; ++pl) {
            const T* xc = xp + pl * is;
            Acc r = kind_ == PoolKind::kMax ? -std::numeric_limits<Acc>::infinity() : Acc(0);
            for (int64_t i = 0; i < is; ++i) {
              const Acc v = static_cast<Acc>(to_f32(xc[i]));
              if (kind_ == PoolKind::kMax) r = v > r ? v : r;
              else if (kind_ == PoolKind::kAverage) r += v;
              else r += static_cast<Acc>(std::pow(std::abs(v), p_));
            }
            if (kind_ == PoolKind::kAverage) r /= static_cast<Acc>(is);
            if (kind_ == PoolKind::kLp) r = static_cast<Acc>(std::pow(r, 1.0 / p_));
            if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>) {
              yp[pl] = static_cast<T>(r);
            } else {
              yp[pl] = from_f32<T>(static_cast<float>(r));
            }
          }
          return Status::ok();
        },
        "global pool");
  }

  PoolKind kind_;
  double p_ = 2;
};

class MaxUnpoolKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    geom_.kernel = node.attr_ints("kernel_shape");
    if (geom_.kernel.empty()) return invalid_argument("kernel_shape is required");
    return geom_.read_attrs(node);
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const int n = geom_.rank();
    if (x.rank() != n + 2) return invalid_argument("X must have rank " + std::to_string(n + 2));
    if (!dtype_is_byte_addressable(x.dtype()) || x.dtype() == DType::kBool) {
      return unimplemented(std::string("MaxUnpool does not support element type ") + dtype_name(x.dtype()));
    }
    if (ind.dtype() != DType::kInt64 || ind.shape() != x.shape()) {
      return invalid_argument("I must be int64 with the shape of X " + x.shape().to_string());
    }
    // Indices address the inferred output ((in - 1) * stride - pads + kernel); an explicit
    // output_shape places that block at the origin of a larger zero tensor (as the reference does).
    std::vector<int64_t> inferred = {x.shape()[0], x.shape()[1]};
    for (int i = 0; i < n; ++i) {
      inferred.push_back((x.shape()[i + 2] - 1) * geom_.strides[i] + geom_.kernel[i] - geom_.pads[i] -
                         geom_.pads[i + n]);
    }
    std::vector<int64_t> out_dims = inferred;
    if (ctx.has_input(2)) {
      const Tensor& os = ctx.input(2);
      if (os.dtype() != DType::kInt64 || os.rank() != 1 || os.numel() != x.rank()) {
        return invalid_argument("output_shape must be int64 with " + std::to_string(x.rank()) + " values");
      }
      out_dims.assign(os.data<int64_t>(), os.data<int64_t>() + os.numel());
    }
    SDX_ASSIGN_OR_RETURN(Shape inferred_shape, Shape::make(inferred), "MaxUnpool inferred output");
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "MaxUnpool output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
    const int64_t total = inferred_shape.numel();
    std::memset(y.raw_data(), 0, y.nbytes());
    const int64_t* ip = ind.data<int64_t>();
    const size_t es = dtype_storage_bytes(x.dtype(), 1);
    const char* xp = static_cast<const char*>(x.raw_data());
    char* yp = static_cast<char*>(y.raw_data());
    const int r = x.rank();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (ip[i] < 0 || ip[i] >= total) {
        return out_of_range("index " + std::to_string(ip[i]) + " is outside the output of " + std::to_string(total) +
                            " elements");
      }
      int64_t rem = ip[i], flat = 0, stride = 1;
      bool inside = true;
      for (int d = r - 1; d >= 0; --d) {
        const int64_t c = rem % inferred[d];
        rem /= inferred[d];
        if (c >= out_dims[d]) inside = false;
        flat += c * stride;
        stride *= out_dims[d];
      }
      if (inside) std::memcpy(yp + flat * es, xp + i * es, es);
    }
    return Status::ok();
  }

 private:
  WindowGeometry geom_;
};

template <PoolKind K, bool kBlocked = false>
backend::KernelFactory pool_factory() {
  return [](const ir::Node& node) -> Result<std::unique_ptr<backend::Kernel>> {
    auto k = std::make_unique<PoolKernel>(K, kBlocked);
    SDX_RETURN_IF_ERROR(k->init(node), node.describe());
    return std::unique_ptr<backend::Kernel>(std::move(k));
  };
}

template <PoolKind K>
backend::KernelFactory global_pool_factory() {
  return [](const ir::Node& node) -> Result<std::unique_ptr<backend::Kernel>> {
    auto k = std::make_unique<GlobalPoolKernel>(K);
    SDX_RETURN_IF_ERROR(k->init(node), node.describe());
    return std::unique_ptr<backend::Kernel>(std::move(k));
  };
}

const backend::KernelRegistrar kAveragePool({"AveragePool", "", 1, backend::kAnyOpset,
                                             pool_factory<PoolKind::kAverage>()});
const backend::KernelRegistrar kMaxPool({"MaxPool", "", 1, backend::kAnyOpset, pool_factory<PoolKind::kMax>()});
const backend::KernelRegistrar kBlockedAveragePool({"BlockedAveragePool", "sdx", 1, backend::kAnyOpset,
                                                    pool_factory<PoolKind::kAverage, true>()});
const backend::KernelRegistrar kBlockedMaxPool({"BlockedMaxPool", "sdx", 1, backend::kAnyOpset,
                                                pool_factory<PoolKind::kMax, true>()});
const backend::KernelRegistrar kLpPool({"LpPool", "", 1, backend::kAnyOpset, pool_factory<PoolKind::kLp>()});
const backend::KernelRegistrar kGlobalAveragePool({"GlobalAveragePool", "", 1, backend::kAnyOpset,
                                                   global_pool_factory<PoolKind::kAverage>()});
const backend::KernelRegistrar kGlobalMaxPool({"GlobalMaxPool", "", 1, backend::kAnyOpset,
                                               global_pool_factory<PoolKind::kMax>()});
const backend::KernelRegistrar kGlobalLpPool({"GlobalLpPool", "", 1, backend::kAnyOpset,
                                              global_pool_factory<PoolKind::kLp>()});
const backend::KernelRegistrar kMaxUnpool({"MaxUnpool", "", 1, backend::kAnyOpset,
                                           backend::kernel_factory<MaxUnpoolKernel>()});

}  // namespace
}  // namespace sdx::cpu
