// Softmax, LogSoftmax, Hardmax.
//
// Before opset 13 the input is coerced to 2-D at `axis` (default 1): the op runs
// over all of dims[axis:] flattened. From opset 13 it runs along the single dim
// `axis` (default -1). Both views are [outer, n, inner] with stride `inner`.
// Float rows along the last axis (inner == 1) run on the vector kernels (simd/vector_ops.h),
// split over the session's pool by rows. Float along another axis (inner > 1: YOLOv8's DFL softmax over
// 16 bins of [1, 16, 4, anchors]) runs in blocks of kColumnBlock inner positions, each block's n rows
// of contiguous floats on the vector kernels (max, x - max, exp, per-position sums in double, scale),
// the blocks split over the pool; each element's arithmetic does not depend on the block or the thread.
#include <algorithm>
#include <cmath>
#include <limits>
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

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// Elements of rows per parallel chunk (about 10 us of exp, sum and scale).
constexpr int64_t kRowsGrainElements = int64_t{1} << 13;
// Inner positions per block of the strided float path (its statistics fit in 3 KiB of stack).
constexpr int64_t kColumnBlock = 256;

template <SoftmaxKind K>
class SoftmaxKernel final : public backend::Kernel {
 public:
  static constexpr const char* kName = K == SoftmaxKind::kSoftmax ? "Softmax" : K == SoftmaxKind::kLogSoftmax ? "LogSoftmax" : "Hardmax";

  Status init(const ir::Node& node) override {
    coerce_2d_ = node.opset() < 13;
    axis_ = node.attr_int("axis", coerce_2d_ ? 1 : -1);
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    SDX_ASSIGN_OR_RETURN(Extent e, extent(x.shape()), "");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), kName);
    if (x.numel() == 0) return Status::ok();
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          Scratch<T> scratch(e);
          compute<T>(x.data<T>(), y.data<T>(), e, scratch);
          return Status::ok();
        },
        kName);
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return no_bound_form();
    const Tensor& x = ctx.input(0);
    Result<Extent> ext = extent(x.shape());
    if (!ext.is_ok() || !output_matches(ctx, 0, x.dtype(), x.shape())) return no_bound_form();
    if (x.numel() == 0) return backend::bind_call([] { return Status::ok(); });
    std::unique_ptr<backend::BoundKernel> bound;
    (void)dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          bound = backend::bind_call([e = ext.value(), px = x.data<T>(), py = ctx.output(0).data<T>(),
                                      scratch = std::make_unique<Scratch<T>>(ext.value())] {
            compute<T>(px, py, e, *scratch);
            return Status::ok();
          });
          return Status::ok();
        },
        kName);
    return bound;
  }

 private:
  // The input viewed as [outer, n, inner]; the op runs along n.
  struct Extent {
    int64_t outer = 1, n = 1, inner = 1;
  };
  Result<Extent> extent(const Shape& s) const {
    const int rank = s.rank();
    if (rank == 0 && !coerce_2d_) return invalid_argument(std::string(kName) + " input must have rank >= 1");
    SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, coerce_2d_ && rank == 0 ? 1 : rank),
                         std::string(kName) + " attribute 'axis'");
    Extent e;
    if (coerce_2d_) {
      e.outer = s.size_between(0, axis);
      e.n = s.size_between(axis, rank);
      e.inner = 1;
    } else {
      e.outer = s.size_between(0, axis);
      e.n = s.dim(axis);
      e.inner = s.size_between(axis + 1, rank);
    }
    return e;
  }

  // Per-call statistics buffers (one per inner position) and, for 16-bit floats, the
  // exponentials in float. run() makes one per call, a bound call keeps one.
  template <typename T>
  struct Scratch {
    using C = compute_t<T>;
    explicit Scratch(const Extent& e)
        : mx(static_cast<size_t>(e.inner)),
          arg(static_cast<size_t>(e.inner)),
          sum(static_cast<size_t>(e.inner)),
          exps(std::is_same_v<T, C> ? 0 : static_cast<size_t>(e.n * e.inner)) {}
    std::vector<C> mx;
    std::vector<int64_t> arg;
    std::vector<double> sum;
    std::vector<C> exps;  // exponentials go straight to the output when it has the compute type
  };

  // exp in the compute type: the vectorizable fast_expf for float, libm for double.
  template <typename C>
  static C exp_c(C v) {
    if constexpr (std::is_same_v<C, float>) return fast_expf(v);
    else return std::exp(v);
  }

  // Each outer block is [n, inner]; statistics are kept per inner position so the
  // innermost loops run over contiguous memory (for inner == 1 over the row).
  template <typename T>
  static void compute(const T* px, T* py, const Extent& e, Scratch<T>& buffers) {
    using C = compute_t<T>;
    const int64_t outer = e.outer, n = e.n, inner = e.inner;
    if constexpr (std::is_same_v<T, float> && K != SoftmaxKind::kHardmax) {
      // Contiguous float rows: the vector kernels, rows split over the pool (each row whole
      // on one thread, so the sums never depend on the thread count).
      if (inner == 1) {
        parallel_for(outer, std::max<int64_t>(1, kRowsGrainElements / n), [&](int64_t b, int64_t end) {
          for (int64_t o = b; o < end; ++o) {
            if constexpr (K == SoftmaxKind::kSoftmax) simd::softmax_row(px + o * n, py + o * n, n);
            else simd::log_softmax_row(px + o * n, py + o * n, n);
          }
        });
        return;
      }
      const int64_t per_outer = (inner + kColumnBlock - 1) / kColumnBlock;
      parallel_for(outer * per_outer, std::max<int64_t>(1, kRowsGrainElements / (n * kColumnBlock)),
                   [&](int64_t b, int64_t end) {
                     for (int64_t blk = b; blk < end; ++blk) {
                       const int64_t o = blk / per_outer, i0 = blk % per_outer * kColumnBlock;
                       const int64_t off = o * n * inner + i0;
                       strided_block(px + off, py + off, n, inner, std::min(kColumnBlock, inner - i0));
                     }
                   });
      return;
    }
    const size_t ni = static_cast<size_t>(inner);
    std::vector<C>& mx = buffers.mx;
    std::vector<int64_t>& arg = buffers.arg;
    std::vector<double>& sum = buffers.sum;
    std::vector<C>& scratch = buffers.exps;
    for (int64_t o = 0; o < outer; ++o) {
      const T* xb = px + o * n * inner;
      T* yb = py + o * n * inner;
      C* eb;
      if constexpr (std::is_same_v<T, C>) eb = yb;
      else eb = scratch.data();
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<C>::infinity());
      if constexpr (K == SoftmaxKind::kHardmax) {
        std::fill(arg.begin(), arg.end(), 0);
        for (int64_t k = 0; k < n; ++k)
          for (size_t i = 0; i < ni; ++i) {
            C v = load_as<C>(xb[k * inner + static_cast<int64_t>(i)]);
            if (v > mx[i]) { mx[i] = v; arg[i] = k; }
          }
        for (int64_t k = 0; k < n; ++k)
          for (size_t i = 0; i < ni; ++i) yb[k * inner + static_cast<int64_t>(i)] = store_as<T>(C(arg[i] == k ? 1 : 0));
        continue;
      }
      if (inner == 1) {
        row<T>(xb, yb, eb, n);
        continue;
      }
      C* __restrict m = mx.data();
      double* __restrict sm = sum.data();
      for (int64_t k = 0; k < n; ++k) {
        const T* __restrict xr = xb + k * inner;
        for (size_t i = 0; i < ni; ++i) {
          C v = load_as<C>(xr[i]);
          m[i] = v > m[i] ? v : m[i];
        }
      }
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t k = 0; k < n; ++k) {
        const T* __restrict xr = xb + k * inner;
        C* __restrict er = eb + k * inner;
        for (size_t i = 0; i < ni; ++i) {
          C e = exp_c<C>(load_as<C>(xr[i]) - m[i]);
          er[i] = e;
          sm[i] += static_cast<double>(e);
        }
      }
      for (size_t i = 0; i < ni; ++i) {
        if constexpr (K == SoftmaxKind::kSoftmax) m[i] = static_cast<C>(1.0 / sm[i]);  // m now holds 1 / sum
        else m[i] += static_cast<C>(std::log(sm[i]));                                 // m now holds max + log(sum)
      }
      for (int64_t k = 0; k < n; ++k) {
        const T* __restrict xr = xb + k * inner;
        const C* er = eb + k * inner;
        T* yr = yb + k * inner;
        for (size_t i = 0; i < ni; ++i) {
          if constexpr (K == SoftmaxKind::kSoftmax) yr[i] = store_as<T>(er[i] * m[i]);
          else yr[i] = store_as<T>(load_as<C>(xr[i]) - m[i]);
        }
      }
    }
  }

  // w inner positions of one outer block: element (k, i) at x[k * inner + i], k < n. Max per position
  // (NaN ignored unless every value is NaN, as the scalar path), e = exp(x - max) on the vector kernels
  // into y, sums in double in k order, then y = e * (1 / sum) (Softmax) or y = x - (max + log(sum)).
  static void strided_block(const float* x, float* y, int64_t n, int64_t inner, int64_t w) {
    float m[kColumnBlock];
    double sum[kColumnBlock];
    std::fill(m, m + w, -std::numeric_limits<float>::infinity());
    for (int64_t k = 0; k < n; ++k) {
      const float* xr = x + k * inner;
      for (int64_t i = 0; i < w; ++i) m[i] = xr[i] > m[i] ? xr[i] : m[i];
    }
    std::fill(sum, sum + w, 0.0);
    for (int64_t k = 0; k < n; ++k) {
      float* yr = y + k * inner;
      simd::binary_vv(simd::BinaryOp::kSub, x + k * inner, m, yr, w);
      simd::exp(yr, yr, w);
      for (int64_t i = 0; i < w; ++i) sum[i] += static_cast<double>(yr[i]);
    }
    for (int64_t i = 0; i < w; ++i) {
      if constexpr (K == SoftmaxKind::kSoftmax) m[i] = static_cast<float>(1.0 / sum[i]);  // m now holds 1 / sum
      else m[i] += static_cast<float>(std::log(sum[i]));                                 // m now holds max + log(sum)
    }
    for (int64_t k = 0; k < n; ++k) {
      if constexpr (K == SoftmaxKind::kSoftmax)
        simd::binary_vv(simd::BinaryOp::kMul, y + k * inner, m, y + k * inner, w);
      else
        simd::binary_vv(simd::BinaryOp::kSub, x + k * inner, m, y + k * inner, w);
    }
  }

  // One contiguous row (the inner == 1 case): max, exp, sum, scale.
  template <typename T>
  static void row(const T* __restrict x, T* y, compute_t<T>* e, int64_t n) {
    using C = compute_t<T>;
    C m8[8];
    for (C& v : m8) v = -std::numeric_limits<C>::infinity();
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
      for (int l = 0; l < 8; ++l) {
        C v = load_as<C>(x[k + l]);
        m8[l] = v > m8[l] ? v : m8[l];
      }
    C m = m8[0];
    for (int l = 1; l < 8; ++l) m = m8[l] > m ? m8[l] : m;
    for (; k < n; ++k) {
      C v = load_as<C>(x[k]);
      m = v > m ? v : m;
    }
    for (k = 0; k < n; ++k) e[k] = exp_c<C>(load_as<C>(x[k]) - m);
    double s4[4] = {0, 0, 0, 0};
    for (k = 0; k + 4 <= n; k += 4)
      for (int l = 0; l < 4; ++l) s4[l] += static_cast<double>(e[k + l]);
    double s = (s4[0] + s4[1]) + (s4[2] + s4[3]);
    for (; k < n; ++k) s += static_cast<double>(e[k]);
    if constexpr (K == SoftmaxKind::kSoftmax) {
      const C inv = static_cast<C>(1.0 / s);
      for (k = 0; k < n; ++k) y[k] = store_as<T>(e[k] * inv);
    } else {
      const C shift = m + static_cast<C>(std::log(s));
      for (k = 0; k < n; ++k) y[k] = store_as<T>(load_as<C>(x[k]) - shift);
    }
  }

  bool coerce_2d_ = false;
  int64_t axis_ = -1;
};

const backend::KernelRegistrar kSoftmax(
    {"Softmax", "", 1, backend::kAnyOpset, backend::kernel_factory<SoftmaxKernel<SoftmaxKind::kSoftmax>>()});
const backend::KernelRegistrar kLogSoftmax(
    {"LogSoftmax", "", 1, backend::kAnyOpset, backend::kernel_factory<SoftmaxKernel<SoftmaxKind::kLogSoftmax>>()});
const backend::KernelRegistrar kHardmax(
    {"Hardmax", "", 1, backend::kAnyOpset, backend::kernel_factory<SoftmaxKernel<SoftmaxKind::kHardmax>>()});

}  // namespace
}  // namespace sdx::cpu
