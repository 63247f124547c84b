// GridSample (2-D and N-D; nearest/linear/cubic; zeros/border/reflection padding) and AffineGrid.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/kernels/util/conv_util.h"
#include "core/type_dispatch.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

enum class SampleMode { kNearest, kLinear, kCubic };
enum class PadMode { kZeros, kBorder, kReflection };

// Reflects x into [lo, hi] by bouncing off the nearest border repeatedly.
double reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double x, double* c) {
  constexpr double A = -0.75;
  x = std::abs(x);
  c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

class GridSampleKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const std::string mode = node.attr_string("mode", node.opset() >= 20 ? "linear" : "bilinear");
    if (mode == "nearest") mode_ = SampleMode::kNearest;
    else if (mode == "linear" || mode == "bilinear") mode_ = SampleMode::kLinear;
    else if (mode == "cubic" || mode == "bicubic") mode_ = SampleMode::kCubic;
    else return invalid_argument("unsupported mode '" + mode + "'");
    const std::string pad = node.attr_string("padding_mode", "zeros");
    if (pad == "zeros") pad_ = PadMode::kZeros;
    else if (pad == "border") pad_ = PadMode::kBorder;
    else if (pad == "reflection") pad_ = PadMode::kReflection;
    else return invalid_argument("unsupported padding_mode '" + pad + "'");
    align_corners_ = node.attr_int("align_corners", 0) != 0;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    const int r = x.rank() - 2;
    if (r < 1) return invalid_argument("X must have rank >= 3, got " + x.shape().to_string());
    if (grid.rank() != r + 2 || grid.shape()[0] != x.shape()[0] || grid.shape()[grid.rank() - 1] != r) {
      return invalid_argument("grid " + grid.shape().to_string() + " does not match X " + x.shape().to_string());
    }
    const int64_t N = x.shape()[0], C = x.shape()[1];
    std::vector<int64_t> out_dims = {N, C};
    for (int i = 1; i <= r; ++i) out_dims.push_back(grid.shape()[i]);
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape(out_dims)), "");
    if (y.numel() == 0) return Status::ok();
    SDX_ASSIGN_OR_RETURN(std::vector<float> g, read_floats(grid, "GridSample grid", RealTypes::kFloat), "grid");
    const std::vector<int64_t> dims(x.shape().dims().begin() + 2, x.shape().dims().end());
    const int64_t is = x.shape().size_between(2, x.rank());
    const int64_t os = grid.shape().size_between(1, grid.rank() - 1);
    const int taps = mode_ == SampleMode::kNearest ? 1 : mode_ == SampleMode::kLinear ? 2 : 4;
    int64_t corners = 1;
    for (int i = 0; i < r; ++i) corners *= taps;

    return dispatch<float, double, Float16, BFloat16>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* xp = x.data<T>();
          T* yp = y.data<T>();
          // Per output position: the input index of each corner (-1 = zero padding) and its weight.
          std::vector<int64_t> idx(static_cast<size_t>(r * taps));
          std::vector<double> w(static_cast<size_t>(r * taps));
          std::vector<int64_t> corner_index(static_cast<size_t>(corners));
          std::vector<double> corner_weight(static_cast<size_t>(corners));
          for (int64_t n = 0; n < N; ++n) {
            for (int64_t o = 0; o < os; ++o) {
              const float* gp = g.data() + (n * os + o) * r;
              for (int d = 0; d < r; ++d) {
                // The grid lists coordinates innermost dim first (x, y, z).
                const float nv = gp[r - 1 - d];
                const float len = static_cast<float>(dims[d]);
                float v = align_corners_ ? (nv + 1) / 2.0f * (len - 1) : ((nv + 1) * len - 1) / 2.0f;
                const double lo = align_corners_ ? 0.0 : -0.5, hi = align_corners_ ? len - 1.0 : len - 0.5;
                if (mode_ == SampleMode::kNearest) v = std::nearbyint(v);
                double cv = v;
                if (cv < lo || cv > hi) {
                  if (pad_ == PadMode::kBorder) cv = std::clamp(cv, 0.0, len - 1.0);
                  else if (pad_ == PadMode::kReflection) cv = reflect(cv, lo, hi);
                }
                int64_t base;
                double* wd = w.data() + d * taps;
                if (mode_ == SampleMode::kNearest) {
                  base = static_cast<int64_t>(cv);
                  wd[0] = 1;
                } else if (mode_ == SampleMode::kLinear) {
                  base = static_cast<int64_t>(std::floor(cv));
                  const double f = cv - static_cast<double>(base);
                  wd[0] = 1 - f;
                  wd[1] = f;
                } else {
                  const int64_t x0 = static_cast<int64_t>(std::floor(cv));
                  cubic_coeffs(cv - static_cast<double>(x0), wd);
                  base = x0 - 1;
                }
                for (int t = 0; t < taps; ++t) {
                  int64_t i = base + t;
                  if (i < 0 || i >= dims[d]) {
                    if (pad_ == PadMode::kZeros) i = -1;
                    else if (pad_ == PadMode::kBorder) i = std::clamp<int64_t>(i, 0, dims[d] - 1);
                    else i = static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi));
                  }
                  idx[d * taps + t] = i;
                }
              }
              // Combine per-dim taps into corners (row-major flat index, product weight).
              for (int64_t c = 0; c < corners; ++c) {
                int64_t rem = c, flat = 0;
                double wt = 1;
                bool zero = false;
                int64_t stride = 1;
                for (int d = r - 1; d >= 0; --d) {
                  const int t = static_cast<int>(rem % taps);
                  rem /= taps;
                  const int64_t i = idx[d * taps + t];
                  if (i < 0) zero = true;
                  flat += i * stride;
                  stride *= dims[d];
                  wt *= w[d * taps + t];
                }
                corner_index[c] = zero ? -1 : flat;
                corner_weight[c] = wt;
              }
              for (int64_t ch = 0; ch < C; ++ch) {
                const T* xc = xp + (n * C + ch) * is;
                double acc = 0;
                for (int64_t c = 0; c < corners; ++c) {
                  if (corner_index[c] >= 0) acc += corner_weight[c] * load_as<double>(xc[corner_index[c]]);
                }
                T* out = yp + (n * C + ch) * os + o;
                if constexpr (std::is_same_v<T, double>) *out = acc;
                else *out = from_f32<T>(static_cast<float>(acc));
              }
            }
          }
          return Status::ok();
        },
        "GridSample");
  }

 private:
  SampleMode mode_ = SampleMode::kLinear;
  PadMode pad_ = PadMode::kZeros;
  bool align_corners_ = false;
};

class AffineGridKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    align_corners_ = node.attr_int("align_corners", 0) != 0;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& theta = ctx.input(0);
    const Tensor& size = ctx.input(1);
    if (size.dtype() != DType::kInt64 || size.rank() != 1 || (size.numel() != 4 && size.numel() != 5)) {
      return invalid_argument("size must be int64 [N, C, H, W] or [N, C, D, H, W]");
    }
    const int r = static_cast<int>(size.numel()) - 2;
    const int64_t* sz = size.data<int64_t>();
    const int64_t N = sz[0];
    if (theta.rank() != 3 || theta.shape()[0] != N || theta.shape()[1] != r || theta.shape()[2] != r + 1) {
      return invalid_argument("theta " + theta.shape().to_string() + " must be [N, " + std::to_string(r) + ", " +
                              std::to_string(r + 1) + "]");
    }
    std::vector<int64_t> out_dims = {N};
    for (int d = 0; d < r; ++d) out_dims.push_back(sz[2 + d]);
    out_dims.push_back(r);
    SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(out_dims), "AffineGrid output");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, theta.dtype(), out_shape), "");
    if (y.numel() == 0) return Status::ok();
    // Base coordinate along each spatial dim (dims in D, H, W order).
    std::vector<std::vector<double>> base(static_cast<size_t>(r));
    for (int d = 0; d < r; ++d) {
      const int64_t L = sz[2 + d];
      for (int64_t i = 0; i < L; ++i) {
        base[d].push_back(align_corners_ ? (L == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / (L - 1))
                                         : -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(L));
      }
    }
    const int64_t points = out_shape.numel() / (N * r);
    return dispatch<float, double, Float16, BFloat16>(
        theta.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* th = theta.data<T>();
          T* yp = y.data<T>();
          std::vector<int64_t> pos(static_cast<size_t>(r), 0);
          std::vector<double> h(static_cast<size_t>(r + 1));
          for (int64_t n = 0; n < N; ++n) {
            std::fill(pos.begin(), pos.end(), 0);
            for (int64_t p = 0; p < points; ++p) {
              // Homogeneous point (x, y[, z], 1): innermost dim first.
              for (int d = 0; d < r; ++d) h[d] = base[r - 1 - d][pos[r - 1 - d]];
              h[r] = 1.0;
              for (int row = 0; row < r; ++row) {
                double acc = 0;
                for (int col = 0; col <= r; ++col)
                  acc += load_as<double>(th[(n * r + row) * (r + 1) + col]) * h[col];
                T* out = yp + (n * points + p) * r + row;
                if constexpr (std::is_same_v<T, double>) *out = acc;
                else *out = from_f32<T>(static_cast<float>(acc));
              }
              for (int d = r - 1; d >= 0; --d) {
                if (++pos[d] < sz[2 + d]) break;
                pos[d] = 0;
              }
            }
          }
          return Status::ok();
        },
        "AffineGrid");
  }

 private:
  bool align_corners_ = false;
};

const backend::KernelRegistrar kGridSample({"GridSample", "", 16, backend::kAnyOpset,
                                            backend::kernel_factory<GridSampleKernel>()});
const backend::KernelRegistrar kAffineGrid({"AffineGrid", "", 20, backend::kAnyOpset,
                                            backend::kernel_factory<AffineGridKernel>()});

}  // namespace
}  // namespace sdx::cpu
