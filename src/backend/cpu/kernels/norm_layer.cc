// LayerNormalization, RMSNormalization, GroupNormalization,
// InstanceNormalization, MeanVarianceNormalization, LpNormalization.
//
// Statistics are computed in double (the stash type only decides the element
// type of LayerNormalization's Mean / InvStdDev outputs); results are rounded to
// the input type once at the end. Float LayerNormalization / RMSNormalization rows run on
// the vector kernels (simd/vector_ops.h), split over the session's pool by rows.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/cpu/kernels/util/bound_util.h"
#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "backend/cpu/simd/vector_ops.h"
#include "core/tensor_values.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// Elements of rows per parallel chunk (about 10 us of statistics and scaling).
constexpr int64_t kRowsGrainElements = int64_t{1} << 13;

// Reads a float-typed tensor element as double, whatever its float type.
template <typename T>
inline double ld(const T* p, int64_t i) {
  return load_as<double>(p[i]);
}

// Sum of f(x[k]) over a row in double, with four accumulators for ILP.
template <typename T, typename F>
double sum_of(const T* x, int64_t n, F f) {
  double s[4] = {0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 4 <= n; k += 4)
    for (int l = 0; l < 4; ++l) s[l] += f(load_as<double>(x[k + l]));
  for (; k < n; ++k) s[0] += f(load_as<double>(x[k]));
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// Index into a tensor of shape `s` that is unidirectionally broadcast to the
// trailing dims `target` (numpy rules), for a flat index into `target`.
class TrailingBroadcast {
 public:
  static Result<TrailingBroadcast> make(const Shape& s, const std::vector<int64_t>& target, const std::string& what) {
    TrailingBroadcast b;
    const int tr = static_cast<int>(target.size());
    if (s.rank() > tr) return invalid_argument(what + " shape " + s.to_string() + " has more dims than the normalized shape");
    b.dims_ = target;
    b.strides_.assign(target.size(), 0);
    int64_t st = 1;
    for (int d = s.rank() - 1; d >= 0; --d) {
      const int td = tr - (s.rank() - d);
      const int64_t sd = s.dim(d);
      if (sd != target[static_cast<size_t>(td)] && sd != 1)
        return invalid_argument(what + " shape " + s.to_string() + " does not broadcast to " + dims_to_string(target));
      b.strides_[static_cast<size_t>(td)] = sd == 1 ? 0 : st;
      st *= sd;
    }
    b.identity_ = s.numel() == Shape(target).numel();
    return b;
  }
  int64_t map(int64_t flat) const {
    if (identity_) return flat;
    int64_t off = 0;
    for (size_t d = dims_.size(); d-- > 0;) {
      off += (flat % dims_[d]) * strides_[d];
      flat /= dims_[d];
    }
    return off;
  }

 private:
  std::vector<int64_t> dims_, strides_;
  bool identity_ = true;
};

// ---- LayerNormalization / RMSNormalization ---------------------------------

template <bool kRms>
class LayerNormKernel final : public backend::Kernel {
 public:
  static constexpr const char* kName = kRms ? "RMSNormalization" : "LayerNormalization";
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", -1);
    epsilon_ = node.attr_float("epsilon", 1e-5f);
    int64_t st = node.attr_int("stash_type", 1);
    auto dt = dtype_from_onnx(static_cast<int>(st));
    if (!dt || !dtype_is_float(*dt)) return invalid_argument(std::string(kName) + ": attribute 'stash_type' must be a float type");
    stash_ = *dt;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* bias = !kRms && ctx.has_input(2) ? &ctx.input(2) : nullptr;
    SDX_ASSIGN_OR_RETURN(Geometry g, geometry(x, ctx.input(1), bias), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), kName);
    Tensor mean_t, inv_t;
    const bool want_mean = !kRms && ctx.num_outputs() > 1 && ctx.wants_output(1);
    const bool want_inv = !kRms && ctx.num_outputs() > 2 && ctx.wants_output(2);
    if (want_mean) {
      SDX_ASSIGN_OR_RETURN(mean_t, ctx.allocate_output(1, stash_, g.stat_shape), kName);
    }
    if (want_inv) {
      SDX_ASSIGN_OR_RETURN(inv_t, ctx.allocate_output(2, stash_, g.stat_shape), kName);
    }
    std::vector<double> means(static_cast<size_t>(g.outer)), invs(static_cast<size_t>(g.outer));
    SDX_RETURN_IF_ERROR(dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          Affine<T> affine(g.n);
          affine.fill(g, ctx.input(1).data<T>(), bias ? bias->data<T>() : nullptr);
          normalize<T>(g, epsilon_, x.data<T>(), y.data<T>(), affine, means.data(), invs.data());
          return Status::ok();
        },
        kName), "");
    if (want_mean) SDX_RETURN_IF_ERROR(store_stats(mean_t.dtype(), mean_t.raw_data(), means.data(), g.outer), "");
    if (want_inv) SDX_RETURN_IF_ERROR(store_stats(inv_t.dtype(), inv_t.raw_data(), invs.data(), g.outer), "");
    return Status::ok();
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    const bool has_bias = !kRms && ctx.num_inputs() > 2 && ctx.has_input(2);
    const Tensor* bias = has_bias ? &ctx.input(2) : nullptr;
    Result<Geometry> geom = geometry(x, ctx.input(1), bias);
    if (!geom.is_ok() || !output_matches(ctx, 0, x.dtype(), x.shape())) return no_bound_form();
    const Geometry& g = geom.value();
    const bool want_mean = !kRms && ctx.num_outputs() > 1 && ctx.wants_output(1);
    const bool want_inv = !kRms && ctx.num_outputs() > 2 && ctx.wants_output(2);
    if ((want_mean && !output_matches(ctx, 1, stash_, g.stat_shape)) ||
        (want_inv && !output_matches(ctx, 2, stash_, g.stat_shape)))
      return no_bound_form();
    if ((want_mean || want_inv) && !store_stats(stash_, nullptr, nullptr, 0).is_ok()) return no_bound_form();
    void* mean_out = want_mean ? ctx.output(1).raw_data() : nullptr;
    void* inv_out = want_inv ? ctx.output(2).raw_data() : nullptr;
    const DType stash = stash_;
    // Scale and bias are usually weights: expand them once when their values are fixed.
    const bool affine_fixed = ctx.input_is_constant(1) && (!has_bias || ctx.input_is_constant(2));
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          auto affine = std::make_unique<Affine<T>>(g.n);
          const T* ps = ctx.input(1).data<T>();
          const T* pb = bias ? bias->data<T>() : nullptr;
          if (affine_fixed) affine->fill(g, ps, pb);
          ScratchBuffer<double> means(static_cast<size_t>(g.outer)), invs(static_cast<size_t>(g.outer));
          bound = backend::bind_call([g, eps = epsilon_, px = x.data<T>(), py = ctx.output(0).data<T>(), ps, pb,
                                      affine_fixed, affine = std::move(affine), means = std::move(means),
                                      invs = std::move(invs), stash, mean_out, inv_out] {
            if (!affine_fixed) affine->fill(g, ps, pb);
            normalize<T>(g, eps, px, py, *affine, means.data(), invs.data());
            if (mean_out) (void)store_stats(stash, mean_out, means.data(), g.outer);
            if (inv_out) (void)store_stats(stash, inv_out, invs.data(), g.outer);
            return Status::ok();
          });
          return Status::ok();
        },
        kName);
    return bound;
  }

 private:
  // x viewed as [outer, n] (n: the normalized dims from `axis` on); Scale and B broadcast to them.
  struct Geometry {
    int64_t outer = 1, n = 1;
    TrailingBroadcast sb, bb;
    Shape stat_shape;  // Mean / InvStdDev: x's shape with 1 for the normalized dims
  };
  Result<Geometry> geometry(const Tensor& x, const Tensor& scale, const Tensor* bias) const {
    Geometry g;
    SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, x.rank()), std::string(kName) + " attribute 'axis'");
    std::vector<int64_t> norm_dims(x.shape().dims().begin() + axis, x.shape().dims().end());
    split_at(x.shape(), axis, g.outer, g.n);
    SDX_ASSIGN_OR_RETURN(g.sb, TrailingBroadcast::make(scale.shape(), norm_dims, "Scale"), kName);
    if (bias) {
      SDX_ASSIGN_OR_RETURN(g.bb, TrailingBroadcast::make(bias->shape(), norm_dims, "B"), kName);
      if (bias->dtype() != x.dtype()) return invalid_argument(std::string(kName) + ": B type differs from X");
    }
    if (scale.dtype() != x.dtype()) return invalid_argument(std::string(kName) + ": Scale type differs from X");
    std::vector<int64_t> stat_dims(x.shape().dims().begin(), x.shape().dims().begin() + axis);
    stat_dims.resize(static_cast<size_t>(x.rank()), 1);
    g.stat_shape = Shape(stat_dims);
    return g;
  }

  // Scale and bias expanded to the normalized shape, in the compute type.
  template <typename T>
  struct Affine {
    using C = compute_t<T>;
    explicit Affine(int64_t n) : sv(static_cast<size_t>(n)), bv(static_cast<size_t>(n), C(0)) {}
    // pb: null without a bias (bv stays 0).
    void fill(const Geometry& g, const T* ps, const T* pb) {
      for (int64_t k = 0; k < g.n; ++k) {
        sv[static_cast<size_t>(k)] = load_as<C>(ps[g.sb.map(k)]);
        if (pb) bv[static_cast<size_t>(k)] = load_as<C>(pb[g.bb.map(k)]);
      }
    }
    std::vector<C> sv, bv;
  };

  // Normalizes every row; means / invs (outer values each) receive the statistics.
  template <typename T>
  static void normalize(const Geometry& g, float epsilon, const T* px, T* py, const Affine<T>& affine, double* means,
                        double* invs) {
    using C = compute_t<T>;
    const int64_t n = g.n;
    const std::vector<C>& sv = affine.sv;
    const std::vector<C>& bv = affine.bv;
    if constexpr (std::is_same_v<T, float>) {
      // The vector kernels, rows split over the pool (each row's statistics on one thread).
      parallel_for(g.outer, std::max<int64_t>(1, kRowsGrainElements / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o)
          simd::norm_row(px + o * n, py + o * n, sv.data(), bv.data(), n, epsilon, kRms, means + o, invs + o);
      });
      return;
    }
    for (int64_t o = 0; o < g.outer; ++o) {
      const T* xs = px + o * n;
      double mean = 0;
      if constexpr (!kRms) mean = sum_of(xs, n, [](double v) { return v; }) / static_cast<double>(n);
      const double var = sum_of(xs, n, [mean](double v) { return (v - mean) * (v - mean); }) / static_cast<double>(n);
      const double inv = 1.0 / std::sqrt(var + static_cast<double>(epsilon));
      means[o] = mean;
      invs[o] = inv;
      const C cm = static_cast<C>(mean), ci = static_cast<C>(inv);
      T* ys = py + o * n;
      for (int64_t k = 0; k < n; ++k)
        ys[k] = store_as<T>((load_as<C>(xs[k]) - cm) * ci * sv[static_cast<size_t>(k)] + bv[static_cast<size_t>(k)]);
    }
  }

  // Stores n statistics into a stash-type buffer. Only fails on a non-float stash type (init rejects those).
  static Status store_stats(DType stash, void* dst, const double* v, int64_t n) {
    switch (stash) {
      case DType::kFloat32:
        return store_stats_as<float>(dst, v, n);
      case DType::kFloat64:
        return store_stats_as<double>(dst, v, n);
      case DType::kFloat16:
        return store_stats_as<Float16>(dst, v, n);
      case DType::kBFloat16:
        return store_stats_as<BFloat16>(dst, v, n);
      default:
        return unimplemented(std::string(kName) + " does not support element type " + dtype_name(stash));
    }
  }
  template <typename S>
  static Status store_stats_as(void* dst, const double* v, int64_t n) {
    for (int64_t o = 0; o < n; ++o) static_cast<S*>(dst)[o] = store_as<S>(v[o]);
    return Status::ok();
  }

  int64_t axis_ = -1;
  float epsilon_ = 1e-5f;
  DType stash_ = DType::kFloat32;
};

// ---- Group / Instance normalization ------------------------------------------
// x viewed as [N, G, C/G * spatial]; each (n, g) block is normalized, then
// channel c gets scale[c] * v + bias[c] (per_group_affine: scale[g], bias[g]).

template <typename T>
void group_norm(const T* px, T* py, const T* ps, const T* pb, int64_t batch, int64_t channels, int64_t groups,
                int64_t spatial, double eps, bool per_group_affine) {
  if (groups == 0) return;  // no channels: nothing to normalize
  const int64_t cpg = channels / groups;
  const int64_t block = cpg * spatial;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (b * groups + g) * block;
      double mean = 0;
      for (int64_t k = 0; k < block; ++k) mean += ld(px, base + k);
      mean /= static_cast<double>(block);
      double var = 0;
      for (int64_t k = 0; k < block; ++k) {
        double d = ld(px, base + k) - mean;
        var += d * d;
      }
      var /= static_cast<double>(block);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t c = 0; c < cpg; ++c) {
        const int64_t ch = g * cpg + c;
        const int64_t ai = per_group_affine ? g : ch;
        const double s = ld(ps, ai), bias = ld(pb, ai);
        const int64_t off = base + c * spatial;
        for (int64_t k = 0; k < spatial; ++k) py[off + k] = store_as<T>((ld(px, off + k) - mean) * inv * s + bias);
      }
    }
  }
}

template <bool kInstance>
class GroupNormKernel final : public backend::Kernel {
 public:
  static constexpr const char* kName = kInstance ? "InstanceNormalization" : "GroupNormalization";
  Status init(const ir::Node& node) override {
    epsilon_ = node.attr_float("epsilon", 1e-5f);
    if (!kInstance) {
      const ir::Attribute* g = node.attr("num_groups");
      if (!g) return invalid_argument("GroupNormalization requires attribute 'num_groups'");
      groups_ = node.attr_int("num_groups", 1);
      if (groups_ <= 0) return invalid_argument("GroupNormalization: 'num_groups' must be positive");
      per_group_affine_ = node.opset() < 21;
    }
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& s = ctx.input(1);
    const Tensor& b = ctx.input(2);
    if (x.rank() < 2) return invalid_argument(std::string(kName) + ": input must have rank >= 2, got " + x.shape().to_string());
    const int64_t batch = x.shape().dim(0), channels = x.shape().dim(1);
    const int64_t groups = kInstance ? channels : groups_;
    if (groups == 0 ? channels != 0 : channels % groups != 0)
      return invalid_argument(std::string(kName) + ": channels " + std::to_string(channels) + " not divisible by num_groups " +
                              std::to_string(groups));
    const int64_t affine = per_group_affine_ ? groups : channels;
    if (s.numel() != affine || b.numel() != affine)
      return invalid_argument(std::string(kName) + ": scale/bias must have " + std::to_string(affine) + " elements, got " +
                              s.shape().to_string() + " and " + b.shape().to_string());
    if (s.dtype() != x.dtype() || b.dtype() != x.dtype()) return invalid_argument(std::string(kName) + ": scale/bias type differs from input");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), kName);
    const int64_t spatial = x.shape().size_between(2, x.rank());
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          group_norm<T>(x.data<T>(), y.data<T>(), s.data<T>(), b.data<T>(), batch, channels, groups, spatial, epsilon_,
                        per_group_affine_);
          return Status::ok();
        },
        kName);
  }

 private:
  float epsilon_ = 1e-5f;
  int64_t groups_ = 1;
  bool per_group_affine_ = false;
};

// ---- MeanVarianceNormalization ------------------------------------------------
// (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes` (default [0, 2, 3]).

class MvnKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axes_ = node.attr_ints("axes", {0, 2, 3});
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(std::vector<int> axes, normalize_axes(axes_, x.rank()), "MeanVarianceNormalization attribute 'axes'");
    ReducePlan plan(x.shape(), axes);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "MeanVarianceNormalization");
    const int64_t m = plan.output_numel();
    const double cnt = static_cast<double>(plan.reduce_count());
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          std::vector<double> s1(static_cast<size_t>(m), 0.0), s2(static_cast<size_t>(m), 0.0);
          plan.for_each_run([&](int64_t o, int64_t i, int64_t n, int64_t step) {
            for (int64_t k = 0; k < n; ++k) {
              double v = ld(px, i + k);
              s1[static_cast<size_t>(o + k * step)] += v;
              s2[static_cast<size_t>(o + k * step)] += v * v;
            }
          });
          for (int64_t j = 0; j < m; ++j) {
            double mean = s1[static_cast<size_t>(j)] / cnt;
            double var = s2[static_cast<size_t>(j)] / cnt - mean * mean;
            s1[static_cast<size_t>(j)] = mean;
            s2[static_cast<size_t>(j)] = 1.0 / (std::sqrt(var < 0 ? 0 : var) + 1e-9);
          }
          plan.for_each_run([&](int64_t o, int64_t i, int64_t n, int64_t step) {
            for (int64_t k = 0; k < n; ++k) {
              const size_t j = static_cast<size_t>(o + k * step);
              py[i + k] = store_as<T>((ld(px, i + k) - s1[j]) * s2[j]);
            }
          });
          return Status::ok();
        },
        "MeanVarianceNormalization");
  }

 private:
  std::vector<int64_t> axes_;
};

// ---- LpNormalization: x / ||x||_p along `axis` (p = 1 or 2). ----------------

class LpNormKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", -1);
    p_ = node.attr_int("p", 2);
    if (p_ != 1 && p_ != 2) return invalid_argument("LpNormalization: 'p' must be 1 or 2, got " + std::to_string(p_));
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, x.rank()), "LpNormalization attribute 'axis'");
    const int64_t outer = x.shape().size_between(0, axis), n = x.shape().dim(axis);
    const int64_t inner = x.shape().size_between(axis + 1, x.rank());
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "LpNormalization");
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t i = 0; i < inner; ++i) {
              const int64_t base = o * n * inner + i;
              double norm = 0;
              for (int64_t k = 0; k < n; ++k) {
                double v = ld(px, base + k * inner);
                norm += p_ == 1 ? std::fabs(v) : v * v;
              }
              if (p_ == 2) norm = std::sqrt(norm);
              for (int64_t k = 0; k < n; ++k)
                py[base + k * inner] = store_as<T>(norm == 0 ? 0.0 : ld(px, base + k * inner) / norm);
            }
          }
          return Status::ok();
        },
        "LpNormalization");
  }

 private:
  int64_t axis_ = -1;
  int64_t p_ = 2;
};

const backend::KernelRegistrar kLayerNorm(
    {"LayerNormalization", "", 1, backend::kAnyOpset, backend::kernel_factory<LayerNormKernel<false>>()});
const backend::KernelRegistrar kRmsNorm(
    {"RMSNormalization", "", 1, backend::kAnyOpset, backend::kernel_factory<LayerNormKernel<true>>()});
const backend::KernelRegistrar kGroupNorm(
    {"GroupNormalization", "", 1, backend::kAnyOpset, backend::kernel_factory<GroupNormKernel<false>>()});
const backend::KernelRegistrar kInstanceNorm(
    {"InstanceNormalization", "", 1, backend::kAnyOpset, backend::kernel_factory<GroupNormKernel<true>>()});
const backend::KernelRegistrar kMvn(
    {"MeanVarianceNormalization", "", 1, backend::kAnyOpset, backend::kernel_factory<MvnKernel>()});
const backend::KernelRegistrar kLpNorm({"LpNormalization", "", 1, backend::kAnyOpset, backend::kernel_factory<LpNormKernel>()});

}  // namespace
}  // namespace sdx::cpu
