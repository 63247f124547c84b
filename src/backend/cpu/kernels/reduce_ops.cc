// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
//
// Axes come from the `axes` attribute in old opsets and from the optional second
// input from opset 13 (ReduceSum) / 18 (the others). No axes reduces everything,
// unless noop_with_empty_axes is set, in which case nothing is reduced (the
// element-wise part of the op, e.g. the square of ReduceSumSquare, still applies).
// Reducing an empty set gives the op's identity (0, 1, -inf, +inf, ...).
// Float reductions over the innermost dims (contiguous rows) run on the vector kernels
// (simd/vector_ops.h, double sums), split over the session's pool by rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
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

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Elements of rows per parallel chunk (about 10 us of reduction).
constexpr int64_t kRowsGrainElements = int64_t{1} << 14;

constexpr const char* reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum: return "ReduceSum";
    case ReduceKind::kMean: return "ReduceMean";
    case ReduceKind::kMax: return "ReduceMax";
    case ReduceKind::kMin: return "ReduceMin";
    case ReduceKind::kProd: return "ReduceProd";
    case ReduceKind::kL1: return "ReduceL1";
    case ReduceKind::kL2: return "ReduceL2";
    case ReduceKind::kLogSum: return "ReduceLogSum";
    case ReduceKind::kLogSumExp: return "ReduceLogSumExp";
    case ReduceKind::kSumSquare: return "ReduceSumSquare";
  }
  return "Reduce";
}

template <typename A>
inline bool is_nan_v(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}

// Accumulates pre(x, out) into acc[out] with comb over every input element.
template <typename T, typename A, typename Pre, typename Comb>
void accumulate(const ReducePlan& plan, const T* x, A* acc, Pre pre, Comb comb) {
  plan.for_each_run([&](int64_t o, int64_t i, int64_t n, int64_t step) {
    if (step == 0) {
      A a = acc[o];
      for (int64_t k = 0; k < n; ++k) a = comb(a, pre(x[i + k], o));
      acc[o] = a;
    } else {
      for (int64_t k = 0; k < n; ++k) acc[o + k] = comb(acc[o + k], pre(x[i + k], o + k));
    }
  });
}

template <ReduceKind K>
class ReduceKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    keepdims_ = node.attr_int("keepdims", 1) != 0;
    noop_ = node.attr_int("noop_with_empty_axes", 0) != 0;
    const int axes_input_since = K == ReduceKind::kSum ? 13 : 18;
    axes_from_input_ = node.opset() >= axes_input_since;
    if (!axes_from_input_) attr_axes_ = node.attr_ints("axes");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const char* name = reduce_name(K);
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> raw;
    bool have_axes = false;
    if (axes_from_input_) {
      if (ctx.has_input(1)) {
        SDX_ASSIGN_OR_RETURN(raw, read_int_list(ctx.input(1), "input 'axes'"), name);
        have_axes = !raw.empty();
      }
    } else {
      raw = attr_axes_;
      have_axes = !raw.empty();
    }
    SDX_ASSIGN_OR_RETURN(ReducePlan plan, make_plan(x.shape(), raw, have_axes), name);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), plan.output_shape(keepdims_)), name);
    return dispatch<SDX_NUMERIC_TYPES, bool>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          if constexpr (supports<T>()) {
            Scratch<T> scratch(y.numel());
            compute<T>(plan, x.data<T>(), y.data<T>(), y.numel(), scratch);
            return Status::ok();
          } else {
            return unimplemented(std::string(name) + " does not support element type bool");
          }
        },
        name);
  }

  // Bound when the axes are known at capture: an attribute, or a constant axes input.
  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> raw;
    bool have_axes = false;
    if (axes_from_input_) {
      if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
        if (!ctx.input_is_constant(1)) return no_bound_form();
        Result<std::vector<int64_t>> read = read_int_list(ctx.input(1), "input 'axes'");
        if (!read.is_ok()) return no_bound_form();
        raw = read.value();
        have_axes = !raw.empty();
      }
    } else {
      raw = attr_axes_;
      have_axes = !raw.empty();
    }
    Result<ReducePlan> plan = make_plan(x.shape(), raw, have_axes);
    if (!plan.is_ok() || !output_matches(ctx, 0, x.dtype(), plan.value().output_shape(keepdims_)))
      return no_bound_form();
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_NUMERIC_TYPES, bool>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          if constexpr (supports<T>()) {
            const int64_t n_out = ctx.output(0).numel();
            bound = backend::bind_call([plan = plan.value(), px = x.data<T>(), py = ctx.output(0).data<T>(), n_out,
                                        scratch = std::make_unique<Scratch<T>>(n_out)] {
              compute<T>(plan, px, py, n_out, *scratch);
              return Status::ok();
            });
          }
          return Status::ok();
        },
        reduce_name(K));
    return bound;
  }

 private:
  // bool reduces only with Max / Min.
  template <typename T>
  static constexpr bool supports() {
    return !std::is_same_v<T, bool> || K == ReduceKind::kMax || K == ReduceKind::kMin;
  }

  Result<ReducePlan> make_plan(const Shape& x, const std::vector<int64_t>& raw, bool have_axes) const {
    std::vector<int> axes;
    if (have_axes) {
      SDX_ASSIGN_OR_RETURN(axes, normalize_axes(raw, x.rank()), "");
    } else if (!noop_) {
      for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
    }
    return ReducePlan(x, axes);
  }

  // Accumulators, one per output element (LogSumExp: the shift and the sum). run() makes
  // one per call, a bound call keeps one.
  template <typename T>
  struct Scratch {
    // bool reduces as uint8_t (std::vector<bool> has no data()); 0/255 identities cast back correctly.
    using MinMaxC = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
    using A = accum_t<T>;
    using D = std::conditional_t<std::is_floating_point_v<A>, A, double>;  // for log/sqrt on integers
    explicit Scratch(int64_t n_out) {
      const size_t n = static_cast<size_t>(n_out);
      if constexpr (K == ReduceKind::kMax || K == ReduceKind::kMin)
        minmax.resize(n);
      else if constexpr (K == ReduceKind::kLogSumExp)
        mx.resize(n), sum.resize(n);
      else
        acc.resize(n);
    }
    std::vector<MinMaxC> minmax;
    std::vector<A> acc;
    std::vector<D> mx, sum;
  };

  // Float reductions of contiguous rows on the vector kernels, rows split over the pool (each
  // row reduced whole by one thread, in a fixed order, whatever the thread count).
  static constexpr bool kVectorRows = K != ReduceKind::kProd && K != ReduceKind::kLogSumExp;

  static float reduce_row(const float* x, int64_t n) {
    if constexpr (K == ReduceKind::kMax) return simd::row_max(x, n);
    else if constexpr (K == ReduceKind::kMin) return simd::row_min(x, n);
    else if constexpr (K == ReduceKind::kSum) return static_cast<float>(simd::row_sum(x, n));
    else if constexpr (K == ReduceKind::kMean) return static_cast<float>(simd::row_sum(x, n) / static_cast<double>(n));
    else if constexpr (K == ReduceKind::kLogSum) return static_cast<float>(std::log(simd::row_sum(x, n)));
    else if constexpr (K == ReduceKind::kL1) return static_cast<float>(simd::row_sum_abs(x, n));
    else if constexpr (K == ReduceKind::kL2) return static_cast<float>(std::sqrt(simd::row_sum_squares(x, n)));
    else return static_cast<float>(simd::row_sum_squares(x, n));  // kSumSquare
  }

  static constexpr int64_t kShortRow = 8;
  static float short_row_min_max(const float* x, int64_t n) {
    float m = x[0];
    for (int64_t j = 1; j < n && m == m; ++j) {
      const float v = x[j];
      if (v != v) return v;
      if constexpr (K == ReduceKind::kMax) m = v > m ? v : m;
      else m = v < m ? v : m;
    }
    return m;
  }

  template <typename T>
  static void compute(const ReducePlan& plan, const T* px, T* py, int64_t n_out, Scratch<T>& scratch) {
    if constexpr (std::is_same_v<T, float> && kVectorRows) {
      int64_t rows = 0, n = 0;
      if (plan.contiguous_rows(rows, n) && rows == n_out) {
        parallel_for(rows, std::max<int64_t>(1, kRowsGrainElements / n), [&](int64_t b, int64_t e) {
          if constexpr (K == ReduceKind::kMax || K == ReduceKind::kMin) {
            // Short rows (a max over 3 stacked maps): a call into the vector kernels per row costs more
            // than the row; the first NaN wins, as in the generic path below.
            if (n <= kShortRow) {
              for (int64_t r = b; r < e; ++r) py[r] = short_row_min_max(px + r * n, n);
              return;
            }
          }
          for (int64_t r = b; r < e; ++r) py[r] = reduce_row(px + r * n, n);
        });
        return;
      }
    }
    if constexpr (K == ReduceKind::kMax || K == ReduceKind::kMin) {
      using C = typename Scratch<T>::MinMaxC;
      constexpr bool kMax = K == ReduceKind::kMax;
      C init;
      if constexpr (std::is_floating_point_v<C>) init = kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
      else init = kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
      std::vector<C>& acc = scratch.minmax;
      std::fill(acc.begin(), acc.end(), init);
      accumulate(plan, px, acc.data(), [](T v, int64_t) { return load_as<C>(v); },
                 [](C a, C v) {
                   if (is_nan_v(a) || is_nan_v(v)) return is_nan_v(a) ? a : v;
                   if constexpr (kMax) return v > a ? v : a;
                   else return v < a ? v : a;
                 });
      for (int64_t j = 0; j < n_out; ++j) py[j] = store_as<T>(acc[static_cast<size_t>(j)]);
    } else {
      using A = typename Scratch<T>::A;
      using D = typename Scratch<T>::D;
      const int64_t count = plan.reduce_count();
      auto plus = [](A a, A b) { return static_cast<A>(a + b); };
      if constexpr (K == ReduceKind::kLogSumExp) {
        // Shift by the largest finite value per output for stability.
        std::vector<D>& mx = scratch.mx;
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<D>::infinity());
        accumulate(
            plan, px, mx.data(), [](T v, int64_t) { return load_as<D>(v); },
            [](D a, D v) { return std::isfinite(v) && v > a ? v : a; });
        for (D& m : mx)
          if (!std::isfinite(m)) m = 0;
        std::vector<D>& s = scratch.sum;
        std::fill(s.begin(), s.end(), D(0));
        accumulate(
            plan, px, s.data(), [&](T v, int64_t o) { return std::exp(load_as<D>(v) - mx[static_cast<size_t>(o)]); },
            [](D a, D b) { return a + b; });
        for (int64_t j = 0; j < n_out; ++j)
          py[j] = store_as<T>(std::log(s[static_cast<size_t>(j)]) + mx[static_cast<size_t>(j)]);
        return;
      }
      std::vector<A>& acc = scratch.acc;
      std::fill(acc.begin(), acc.end(), A(K == ReduceKind::kProd ? 1 : 0));
      if constexpr (K == ReduceKind::kSum || K == ReduceKind::kMean || K == ReduceKind::kLogSum) {
        accumulate(plan, px, acc.data(), [](T v, int64_t) { return load_as<A>(v); }, plus);
      } else if constexpr (K == ReduceKind::kProd) {
        accumulate(plan, px, acc.data(), [](T v, int64_t) { return load_as<A>(v); },
                   [](A a, A b) { return static_cast<A>(a * b); });
      } else if constexpr (K == ReduceKind::kL1) {
        accumulate(plan, px, acc.data(), [](T v, int64_t) {
          A a = load_as<A>(v);
          if constexpr (std::is_unsigned_v<A>) return a;
          else return a < 0 ? static_cast<A>(-a) : a;
        }, plus);
      } else if constexpr (K == ReduceKind::kL2 || K == ReduceKind::kSumSquare) {
        accumulate(
            plan, px, acc.data(),
            [](T v, int64_t) {
              A a = load_as<A>(v);
              return static_cast<A>(a * a);
            },
            plus);
      }
      for (int64_t j = 0; j < n_out; ++j) {
        A a = acc[static_cast<size_t>(j)];
        if constexpr (K == ReduceKind::kMean) {
          if constexpr (std::is_floating_point_v<A>) py[j] = store_as<T>(a / static_cast<A>(count));
          else py[j] = count == 0 ? T(0) : store_as<T>(a / static_cast<A>(count));
        } else if constexpr (K == ReduceKind::kL2) {
          py[j] = store_as<T>(std::sqrt(static_cast<D>(a)));
        } else if constexpr (K == ReduceKind::kLogSum) {
          py[j] = store_as<T>(std::log(static_cast<D>(a)));
        } else {
          py[j] = store_as<T>(a);
        }
      }
    }
  }

  bool keepdims_ = true;
  bool noop_ = false;
  bool axes_from_input_ = false;
  std::vector<int64_t> attr_axes_;
};

template <ReduceKind K>
backend::KernelDef reduce_def() {
  return {reduce_name(K), "", 1, backend::kAnyOpset, backend::kernel_factory<ReduceKernel<K>>()};
}

const backend::KernelRegistrar kReduceSum(reduce_def<ReduceKind::kSum>());
const backend::KernelRegistrar kReduceMean(reduce_def<ReduceKind::kMean>());
const backend::KernelRegistrar kReduceMax(reduce_def<ReduceKind::kMax>());
const backend::KernelRegistrar kReduceMin(reduce_def<ReduceKind::kMin>());
const backend::KernelRegistrar kReduceProd(reduce_def<ReduceKind::kProd>());
const backend::KernelRegistrar kReduceL1(reduce_def<ReduceKind::kL1>());
const backend::KernelRegistrar kReduceL2(reduce_def<ReduceKind::kL2>());
const backend::KernelRegistrar kReduceLogSum(reduce_def<ReduceKind::kLogSum>());
const backend::KernelRegistrar kReduceLogSumExp(reduce_def<ReduceKind::kLogSumExp>());
const backend::KernelRegistrar kReduceSumSquare(reduce_def<ReduceKind::kSumSquare>());

}  // namespace
}  // namespace sdx::cpu
