// Resize (opset 10..) and Upsample (opset 7/9): nearest, linear and cubic interpolation.
//
// Interpolation is separable, so the N-D resize runs as one 1-D pass per resized axis
// (in double, like the ONNX reference). Each pass first builds, for every output
// index, the taps it reads (clamped input index + weight), then streams the data.
// Nearest resizes (the upsampling of detection and OCR models) skip the arithmetic: a gather
// through the same taps, every element type copied as it is (resize_nearest).
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernels/util/conv_util.h"
#include "backend/cpu/threading/thread_pool.h"
#include "core/type_dispatch.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn,  // opset 11 only
};
// kSimple: opset 10 Resize / Upsample (floor when upsampling, ceil when downsampling).
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeOptions {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  AspectPolicy policy = AspectPolicy::kStretch;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
  std::vector<int64_t> axes;
};

// The taps of one output index along one axis.
struct Taps {
  int64_t first = 0;            // offset into AxisPlan::index/weight
  bool extrapolated = false;    // tf_crop_and_resize outside the input: use extrapolation_value
};

struct AxisPlan {
  int n = 0;                    // taps per output index
  std::vector<Taps> taps;       // per output index
  std::vector<int64_t> index;   // out * n, clamped to [0, in)
  std::vector<double> weight;   // out * n
};

std::vector<double> coefficients(const ResizeOptions& o, double ratio, double scale) {
  switch (o.mode) {
    case Mode::kNearest: {
      if (ratio == 1.0) return {0, 1};
      bool upper = false;
      switch (o.nearest) {
        case NearestMode::kRoundPreferFloor: upper = ratio > 0.5; break;
        case NearestMode::kRoundPreferCeil: upper = ratio >= 0.5; break;
        case NearestMode::kFloor: upper = false; break;
        case NearestMode::kCeil: upper = true; break;
        case NearestMode::kSimple: upper = scale < 1.0; break;
      }
      return {upper ? 0.0 : 1.0, upper ? 1.0 : 0.0};
    }
    case Mode::kLinear: {
      if (!o.antialias) return {1 - ratio, ratio};
      const double s = std::min(scale, 1.0);
      const int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1);
      const int64_t footprint = 2 - 2 * start;
      std::vector<double> c(static_cast<size_t>(footprint));
      double sum = 0;
      for (int64_t i = 0; i < footprint; ++i) {
        const double arg = (static_cast<double>(start + i) - ratio) * s;
        c[i] = std::clamp(1 - std::abs(arg), 0.0, 1.0);
        sum += c[i];
      }
      for (double& v : c) v /= sum;
      return c;
    }
    case Mode::kCubic: {
      const double A = o.cubic_a;
      if (!o.antialias) {
        const double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
        return {((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A, ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
                ((A + 2) * q - (A + 3)) * q * q + 1, ((A * q1 - 5 * A) * q1 + 8 * A) * q1 - 4 * A};
      }
      const double s = std::min(scale, 1.0);
      const int64_t start = static_cast<int64_t>(std::floor(-2 / s) + 1), end = 2 - start;
      std::vector<double> c;
      double sum = 0;
      for (int64_t i = start; i < end; ++i) {
        const double x = std::abs(s * (static_cast<double>(i) - ratio));
        double v = 0;
        if (x <= 1) v = (A + 2) * x * x * x - (A + 3) * x * x + 1;
        else if (x < 2) v = A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
        c.push_back(v);
        sum += v;
      }
      for (double& v : c) v /= sum;
      return c;
    }
  }
  return {};
}

// Source coordinate of output index y along an axis; sets *extrapolated for tf_crop_and_resize.
double source_coord(const ResizeOptions& o, double y, double scale, int64_t in, int64_t out, double roi_start,
                    double roi_end, bool* extrapolated) {
  const double out_w = scale * static_cast<double>(in);
  const double in_w = static_cast<double>(in);
  *extrapolated = false;
  switch (o.coord) {
    case Coord::kAlignCorners: return out_w == 1 ? 0.0 : y * (in_w - 1) / (out_w - 1);
    case Coord::kAsymmetric: return y / scale;
    case Coord::kTfCropAndResize: {
      double x = out_w == 1 ? (roi_end - roi_start) * (in_w - 1) / 2 : y * (roi_end - roi_start) * (in_w - 1) / (out_w - 1);
      x += roi_start * (in_w - 1);
      *extrapolated = x < 0 || x > in_w - 1;
      return x;
    }
    case Coord::kPytorchHalfPixel: return out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    case Coord::kHalfPixel: return (y + 0.5) / scale - 0.5;
    case Coord::kTfHalfPixelForNn: return (y + 0.5) / scale;
    case Coord::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out) / out_w;
      const double offset = in_w / 2 * (1 - adjustment);
      return offset + (y + 0.5) / scale - 0.5;
    }
  }
  return 0;
}

AxisPlan plan_axis(const ResizeOptions& o, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  AxisPlan p;
  p.taps.resize(static_cast<size_t>(out));
  for (int64_t y = 0; y < out; ++y) {
    bool extrap = false;
    const double x = source_coord(o, static_cast<double>(y), scale, in, out, roi_start, roi_end, &extrap);
    const double fl = std::floor(x);
    const double ratio = x == fl ? 1.0 : x - fl;
    std::vector<double> c = coefficients(o, ratio, scale);
    const int n = static_cast<int>(c.size());
    if (y == 0) p.n = n;
    // The n taps nearest x (ties prefer the lower index). Computed on x shifted by the edge
    // padding width exactly as the ONNX reference does, so rounding picks the same taps.
    const int64_t pad = (n + 1) / 2;
    const double xp = x + static_cast<double>(pad);
    const double pf = std::floor(xp), frac = xp - pf;
    int64_t start = static_cast<int64_t>(pf) - pad;
    if (n % 2 == 0) start += frac == 0 ? -(n / 2) : -(n / 2) + 1;
    else start += frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    if (o.exclude_outside) {
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        if (start + j < 0 || start + j >= in) c[j] = 0;
        sum += c[j];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    p.taps[y] = {y * n, extrap};
    for (int j = 0; j < n; ++j) {
      p.index.push_back(std::clamp<int64_t>(start + j, 0, in - 1));
      p.weight.push_back(c[j]);
    }
  }
  return p;
}

// Resizes `data` (dims) along `axis` to `out` elements.
std::vector<double> resize_axis(const std::vector<double>& data, std::vector<int64_t>& dims, int axis, int64_t out,
                                const AxisPlan& p, double extrapolation) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  for (size_t i = static_cast<size_t>(axis) + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t in = dims[axis];
  std::vector<double> res(static_cast<size_t>(outer * out * inner));
  for (int64_t a = 0; a < outer; ++a) {
    const double* src = data.data() + a * in * inner;
    double* dst = res.data() + a * out * inner;
    for (int64_t y = 0; y < out; ++y) {
      double* d = dst + y * inner;
      const Taps& t = p.taps[y];
      if (t.extrapolated) {
        std::fill(d, d + inner, extrapolation);
        continue;
      }
      std::fill(d, d + inner, 0.0);
      for (int j = 0; j < p.n; ++j) {
        const double w = p.weight[t.first + j];
        if (w == 0) continue;
        const double* s = src + p.index[t.first + j] * inner;
        for (int64_t k = 0; k < inner; ++k) d[k] += w * s[k];
      }
    }
  }
  dims[axis] = out;
  return res;
}

template <typename T>
T store(double v) {
  if constexpr (std::is_integral_v<T>) {
    v = std::nearbyint(v);
    v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                   static_cast<double>(std::numeric_limits<T>::max()));
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return from_f32<T>(static_cast<float>(v));
  }
}

// Nearest: each output element is one input element (the tap of weight 1 on every axis), so the
// resize is a gather through one index table per axis, copying elements as they are (the double
// path's float -> double -> float round trip is exact; for int64 beyond 2^53 the gather is exact
// where it was not). Output rows (every axis but the last) whose source row is the previous output
// row's are copied from it: an upsampling by k copies k - 1 of every k rows. False, with nothing
// written, when a tap is extrapolated (tf_crop_and_resize) or none has weight 1 (exclude_outside
// at an edge): the interpolation path takes those.
template <typename E>
void gather_rows(const E* x, E* y, const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims,
                 const std::vector<std::vector<int64_t>>& index) {
  const int r = static_cast<int>(out_dims.size());
  const int64_t ow = out_dims[r - 1], iw = in_dims[r - 1];
  int64_t rows = 1;
  for (int a = 0; a + 1 < r; ++a) rows *= out_dims[a];
  const std::vector<int64_t>& last = index[r - 1];
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ow)), [&](int64_t r0, int64_t r1) {
    int64_t prev_src = -1;
    for (int64_t row = r0; row < r1; ++row) {
      // The source row of output row `row`: mixed radix over the output dims, mapped per axis.
      int64_t rem = row, src = 0, stride = 1;
      for (int a = r - 2; a >= 0; --a) {
        const int64_t o = rem % out_dims[a];
        rem /= out_dims[a];
        src += index[a][o] * stride;
        stride *= in_dims[a];
      }
      E* dst = y + row * ow;
      if (src == prev_src) {
        std::memcpy(dst, dst - ow, static_cast<size_t>(ow) * sizeof(E));
        continue;
      }
      prev_src = src;
      const E* s = x + src * iw;
      for (int64_t j = 0; j < ow; ++j) dst[j] = s[last[j]];
    }
  });
}

bool resize_nearest(const ResizeOptions& o, const Tensor& x, Tensor& y, const std::vector<double>& scales,
                    const std::vector<double>& roi) {
  const int r = x.rank();
  const std::vector<int64_t>& in_dims = x.shape().dims();
  const std::vector<int64_t>& out_dims = y.shape().dims();
  std::vector<std::vector<int64_t>> index(static_cast<size_t>(r));
  for (int a = 0; a < r; ++a) {
    std::vector<int64_t>& idx = index[static_cast<size_t>(a)];
    const bool default_roi = roi[a] == 0.0 && roi[a + r] == 1.0;
    if (std::abs(scales[a] - 1.0) < 1e-9 && out_dims[a] == in_dims[a] && default_roi) {
      idx.resize(static_cast<size_t>(in_dims[a]));
      for (int64_t i = 0; i < in_dims[a]; ++i) idx[static_cast<size_t>(i)] = i;
      continue;
    }
    const AxisPlan p = plan_axis(o, in_dims[a], out_dims[a], scales[a], roi[a], roi[a + r]);
    idx.resize(static_cast<size_t>(out_dims[a]));
    for (int64_t i = 0; i < out_dims[a]; ++i) {
      const Taps& t = p.taps[static_cast<size_t>(i)];
      int64_t pick = -1;
      for (int j = 0; j < p.n; ++j)
        if (p.weight[t.first + j] == 1.0) pick = p.index[t.first + j];
      if (t.extrapolated || pick < 0) return false;
      idx[static_cast<size_t>(i)] = pick;
    }
  }
  switch (x.dtype()) {  // the element types the interpolation path takes, by width
    case DType::kFloat32: case DType::kFloat64: case DType::kFloat16: case DType::kBFloat16: case DType::kInt8:
    case DType::kUint8: case DType::kInt16: case DType::kUint16: case DType::kInt32: case DType::kInt64: break;
    default: return false;
  }
  switch (dtype_storage_bytes(x.dtype(), 1)) {
    case 1: gather_rows(x.data<uint8_t>(), y.data<uint8_t>(), in_dims, out_dims, index); return true;
    case 2: gather_rows(x.data<uint16_t>(), y.data<uint16_t>(), in_dims, out_dims, index); return true;
    case 4: gather_rows(x.data<uint32_t>(), y.data<uint32_t>(), in_dims, out_dims, index); return true;
    case 8: gather_rows(x.data<uint64_t>(), y.data<uint64_t>(), in_dims, out_dims, index); return true;
    default: return false;
  }
}

// Resizes x given per-axis scales and output sizes (rank entries each), roi (2 * rank).
Status resize(backend::KernelContext& ctx, const ResizeOptions& o, const Tensor& x, const std::vector<double>& scales,
              const std::vector<int64_t>& sizes, const std::vector<double>& roi) {
  const int r = x.rank();
  SDX_ASSIGN_OR_RETURN(Shape out_shape, Shape::make(sizes), "Resize output");
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), out_shape), "");
  if (y.numel() == 0) return Status::ok();
  if (x.numel() == 0) return invalid_argument("cannot resize an empty input to a non-empty output");
  if (o.mode == Mode::kNearest && r > 0 && resize_nearest(o, x, y, scales, roi)) return Status::ok();
  return dispatch<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, int64_t>(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const T* xp = x.data<T>();
        std::vector<double> data(static_cast<size_t>(x.numel()));
        for (int64_t i = 0; i < x.numel(); ++i) {
          if constexpr (std::is_same_v<T, double>) data[i] = xp[i];
          else data[i] = static_cast<double>(to_f32(xp[i]));
        }
        std::vector<int64_t> dims = x.shape().dims();
        for (int a = 0; a < r; ++a) {
          const bool default_roi = roi[a] == 0.0 && roi[a + r] == 1.0;
          if (std::abs(scales[a] - 1.0) < 1e-9 && sizes[a] == dims[a] && default_roi) continue;
          const AxisPlan p = plan_axis(o, dims[a], sizes[a], scales[a], roi[a], roi[a + r]);
          data = resize_axis(data, dims, a, sizes[a], p, o.extrapolation);
        }
        T* yp = y.data<T>();
        for (int64_t i = 0; i < y.numel(); ++i) yp[i] = store<T>(data[i]);
        return Status::ok();
      },
      "Resize");
}

class ResizeKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    upsample_ = node.op_type() == "Upsample";
    opset_ = node.opset();
    const std::string mode = node.attr_string("mode", "nearest");
    if (mode == "nearest") o_.mode = Mode::kNearest;
    else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") o_.mode = Mode::kLinear;
    else if (mode == "cubic" && !upsample_) o_.mode = Mode::kCubic;
    else return invalid_argument("unsupported mode '" + mode + "'");
    if (upsample_ || opset_ < 11) {
      // Opset 10 Resize and Upsample: asymmetric coordinates, "simple" nearest rounding.
      o_.coord = Coord::kAsymmetric;
      o_.nearest = NearestMode::kSimple;
      if (upsample_ && opset_ < 9) {
        attr_scales_ = node.attr_floats("scales");
        if (attr_scales_.empty()) return invalid_argument("Upsample needs the scales attribute");
      }
      return Status::ok();
    }
    const std::string ct = node.attr_string("coordinate_transformation_mode", "half_pixel");
    if (ct == "half_pixel") o_.coord = Coord::kHalfPixel;
    else if (ct == "half_pixel_symmetric") o_.coord = Coord::kHalfPixelSymmetric;
    else if (ct == "pytorch_half_pixel") o_.coord = Coord::kPytorchHalfPixel;
    else if (ct == "align_corners") o_.coord = Coord::kAlignCorners;
    else if (ct == "asymmetric") o_.coord = Coord::kAsymmetric;
    else if (ct == "tf_crop_and_resize") o_.coord = Coord::kTfCropAndResize;
    else if (ct == "tf_half_pixel_for_nn") o_.coord = Coord::kTfHalfPixelForNn;
    else return invalid_argument("unsupported coordinate_transformation_mode '" + ct + "'");
    const std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") o_.nearest = NearestMode::kRoundPreferFloor;
    else if (nm == "round_prefer_ceil") o_.nearest = NearestMode::kRoundPreferCeil;
    else if (nm == "floor") o_.nearest = NearestMode::kFloor;
    else if (nm == "ceil") o_.nearest = NearestMode::kCeil;
    else return invalid_argument("unsupported nearest_mode '" + nm + "'");
    const std::string kp = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (kp == "stretch") o_.policy = AspectPolicy::kStretch;
    else if (kp == "not_larger") o_.policy = AspectPolicy::kNotLarger;
    else if (kp == "not_smaller") o_.policy = AspectPolicy::kNotSmaller;
    else return invalid_argument("unsupported keep_aspect_ratio_policy '" + kp + "'");
    o_.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
    o_.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
    o_.antialias = node.attr_int("antialias", 0) != 0;
    o_.extrapolation = node.attr_float("extrapolation_value", 0.0f);
    o_.axes = node.attr_ints("axes");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    // Which resized axes the scales/sizes/roi inputs refer to.
    std::vector<int> axes;
    if (o_.axes.empty()) {
      for (int a = 0; a < r; ++a) axes.push_back(a);
    } else {
      for (int64_t a : o_.axes) {
        SDX_ASSIGN_OR_RETURN(int na, normalize_axis(a, r), "axes");
        axes.push_back(na);
      }
    }
    const int k = static_cast<int>(axes.size());
    std::vector<double> scales(static_cast<size_t>(r), 1.0), roi(static_cast<size_t>(2 * r));
    std::vector<int64_t> sizes = x.shape().dims();
    for (int a = 0; a < r; ++a) roi[a + r] = 1.0;

    // Input positions: Upsample-9 (X, scales); Resize-10 (X, scales); Resize-11+ (X, roi, scales, sizes).
    int scales_in = 1, sizes_in = -1, roi_in = -1;
    if (!upsample_ && opset_ >= 11) {
      roi_in = 1;
      scales_in = 2;
      sizes_in = 3;
    }
    std::vector<double> sc;
    if (!attr_scales_.empty()) {
      sc.assign(attr_scales_.begin(), attr_scales_.end());
    } else if (ctx.has_input(scales_in) && ctx.input(scales_in).numel() > 0) {
      SDX_ASSIGN_OR_RETURN(sc, read_doubles(ctx.input(scales_in), "scales", RealTypes::kFloat), "scales");
    }
    const bool has_sizes = sizes_in >= 0 && ctx.has_input(sizes_in) && ctx.input(sizes_in).numel() > 0;
    if (sc.empty() == !has_sizes) return invalid_argument("exactly one of scales and sizes must be given");
    if (roi_in >= 0 && ctx.has_input(roi_in) && ctx.input(roi_in).numel() > 0) {
      SDX_ASSIGN_OR_RETURN(std::vector<double> rv, read_doubles(ctx.input(roi_in), "roi", RealTypes::kFloat), "roi");
      if (static_cast<int>(rv.size()) != 2 * k) return invalid_argument("roi must have 2 * " + std::to_string(k) + " values");
      for (int i = 0; i < k; ++i) {
        roi[axes[i]] = rv[i];
        roi[axes[i] + r] = rv[i + k];
      }
    }
    if (!sc.empty()) {
      if (static_cast<int>(sc.size()) != k) return invalid_argument("scales must have " + std::to_string(k) + " values");
      for (int i = 0; i < k; ++i) {
        if (!(sc[i] > 0)) return invalid_argument("scales must be positive");
        scales[axes[i]] = sc[i];
        sizes[axes[i]] = static_cast<int64_t>(std::floor(sc[i] * static_cast<double>(x.shape()[axes[i]])));
      }
    } else {
      const Tensor& st = ctx.input(sizes_in);
      if (st.dtype() != DType::kInt64 || st.numel() != k) {
        return invalid_argument("sizes must be int64 with " + std::to_string(k) + " values");
      }
      const int64_t* sv = st.data<int64_t>();
      for (int i = 0; i < k; ++i) {
        if (sv[i] < 0) return invalid_argument("sizes must be non-negative");
        sizes[axes[i]] = sv[i];
        scales[axes[i]] = static_cast<double>(sv[i]) / static_cast<double>(x.shape()[axes[i]]);
      }
      if (o_.policy != AspectPolicy::kStretch) {
        double s = scales[axes[0]];
        for (int i = 1; i < k; ++i) {
          s = o_.policy == AspectPolicy::kNotLarger ? std::min(s, scales[axes[i]]) : std::max(s, scales[axes[i]]);
        }
        for (int a : axes) {
          scales[a] = s;
          sizes[a] = static_cast<int64_t>(s * static_cast<double>(x.shape()[a]) + 0.5);
        }
      }
    }
    if (static_cast<int>(scales.size()) != r) return invalid_argument("scales do not match the input rank");
    return resize(ctx, o_, x, scales, sizes, roi);
  }

 private:
  ResizeOptions o_;
  bool upsample_ = false;
  int opset_ = 0;
  std::vector<float> attr_scales_;
};

const backend::KernelRegistrar kResize({"Resize", "", 10, backend::kAnyOpset, backend::kernel_factory<ResizeKernel>()});
const backend::KernelRegistrar kUpsample({"Upsample", "", 7, backend::kAnyOpset, backend::kernel_factory<ResizeKernel>()});

}  // namespace
}  // namespace sdx::cpu
