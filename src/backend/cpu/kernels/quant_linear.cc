// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (per-tensor, per-axis and
// blocked quantization; integer, packed 4/2-bit, float8 and float4 quantized types).
// Arithmetic follows onnx's reference (numpy): divisions and products are rounded to
// the numpy result type of their operands, integers round half to even.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/quant/quant_util.h"
#include "backend/cpu/quant/quantize_rows.h"
#include "backend/cpu/simd/vector_ops.h"
#include "backend/cpu/threading/thread_pool.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// Maps a flat index of x to the index of its scale / zero point.
struct ParamIndex {
  enum Mode { kTensor, kAxis, kBlocked } mode = kTensor;
  int64_t inner = 1;       // elements after the axis
  int64_t axis_dim = 1;    // x.shape[axis]
  int64_t param_axis = 1;  // scale.shape[axis] (blocked)
  int64_t block = 1;

  int64_t operator()(int64_t i) const {
    switch (mode) {
      case kTensor: return 0;
      case kAxis: return (i / inner) % axis_dim;
      case kBlocked: {
        const int64_t in = i % inner, a = (i / inner) % axis_dim, outer = i / (inner * axis_dim);
        return (outer * param_axis + a / block) * inner + in;
      }
    }
    return 0;
  }
};

// Validates the scale's shape against x (onnx _quant_utils.reshape_input rules).
Result<ParamIndex> make_param_index(const Shape& x, const Shape& scale, int64_t axis_attr, int64_t block_size) {
  ParamIndex p;
  if (scale.numel() == 1) return p;  // per tensor, whatever its rank
  SDX_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_attr, x.rank()), "attribute 'axis'");
  p.inner = x.size_between(axis + 1, x.rank());
  p.axis_dim = x[axis];
  if (block_size <= 0) {
    if (scale.rank() != 1 || scale[0] != x[axis])
      return invalid_argument("scale of shape " + scale.to_string() + " does not match x of shape " + x.to_string() +
                              " along axis " + std::to_string(axis) + " (per-axis quantization needs a 1-D scale)");
    p.mode = ParamIndex::kAxis;
    return p;
  }
  if (scale.rank() != x.rank())
    return invalid_argument("blocked quantization needs a scale of the same rank as x; scale " + scale.to_string() +
                            ", x " + x.to_string());
  for (int d = 0; d < x.rank(); ++d) {
    const bool ok = d == axis ? scale[d] == (x[d] + block_size - 1) / block_size : scale[d] == x[d];
    if (!ok)
      return invalid_argument("scale of shape " + scale.to_string() + " does not fit x of shape " + x.to_string() +
                              " with block_size " + std::to_string(block_size) + " on axis " + std::to_string(axis));
  }
  p.mode = ParamIndex::kBlocked;
  p.param_axis = scale[axis];
  p.block = block_size;
  return p;
}

// The fast paths below: the common case of QDQ models (float32 x and scale, per tensor or per axis, 8-bit
// integers), without the general loop's per-element type dispatch and double arithmetic, in the vector
// loops of quant/quantize_rows.h, which give the general loop's bits.

// Elements per parallel chunk of the fast paths (about 16 us of work).
constexpr int64_t kQuantGrain = int64_t{1} << 14;

// Splits [0, n) over the pool by scale: channels(begin, end) on elements [begin, end) that hold whole
// rows of the last axis when it is the quantized one (a scale per element of the row), else
// run(begin, end, p) on each run of elements sharing scale p (per tensor, or per an inner axis).
template <typename Channels, typename Run>
void for_scales(int64_t n, const ParamIndex& pidx, Channels&& channels, Run&& run) {
  if (n == 0) return;
  if (pidx.mode == ParamIndex::kAxis && pidx.inner == 1) {
    const int64_t a = pidx.axis_dim;
    parallel_for(n / a, std::max<int64_t>(1, kQuantGrain / a), [&](int64_t b, int64_t e) { channels(b * a, e * a); });
    return;
  }
  parallel_for(n, kQuantGrain, [&](int64_t b, int64_t e) {
    if (pidx.mode == ParamIndex::kTensor) return run(b, e, int64_t{0});
    for (int64_t i = b; i < e;) {
      const int64_t run_end = std::min(e, (i / pidx.inner + 1) * pidx.inner);
      run(i, run_end, (i / pidx.inner) % pidx.axis_dim);
      i = run_end;
    }
  });
}

template <typename Q>
void quantize_f32(const float* x, const float* s, const Q* zp, Q* y, int64_t n, const ParamIndex& pidx) {
  const int64_t a = pidx.axis_dim;
  for_scales(
      n, pidx,
      [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; r += a) quantize_channels(x + r, s, zp, y + r, a);
      },
      [&](int64_t b, int64_t e, int64_t p) { quantize_row(x + b, s[p], zp ? int32_t{zp[p]} : 0, y + b, e - b); });
}

template <typename Q>
void dequantize_to_f32(const Q* x, const float* s, const Q* zp, float* y, int64_t n, const ParamIndex& pidx) {
  const int64_t a = pidx.axis_dim;
  for_scales(
      n, pidx,
      [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; r += a) dequantize_channels(x + r, s, zp, y + r, a);
      },
      [&](int64_t b, int64_t e, int64_t p) { dequantize_row(x + b, s[p], zp ? float(zp[p]) : 0.f, y + b, e - b); });
}

bool is_float_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

// numpy's result type of an arithmetic op on two floating arrays.
DType promote_float(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
  return DType::kFloat32;  // float32 with a 16-bit float, or float16 with bfloat16
}

// Rounds v to the precision of floating type t.
double round_to(DType t, double v) {
  switch (t) {
    case DType::kFloat32: return static_cast<float>(v);
    case DType::kFloat16: return small_float_to_double(float_to_small_float(v, SmallFloat::kF16, false), SmallFloat::kF16);
    case DType::kBFloat16: return BFloat16::from_float(static_cast<float>(v)).to_float();
    default: return v;
  }
}

bool is_quant_type(DType t) {
  switch (t) {
    case DType::kUint8: case DType::kInt8: case DType::kUint16: case DType::kInt16:
    case DType::kUint4: case DType::kInt4: case DType::kUint2: case DType::kInt2:
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2: case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

bool is_float8(DType t) {
  return t == DType::kFloat8E4M3FN || t == DType::kFloat8E4M3FNUZ || t == DType::kFloat8E5M2 ||
         t == DType::kFloat8E5M2FNUZ;
}

// Range of an integer quantized type.
void int_range(DType t, double* lo, double* hi) {
  const int bits = dtype_bits(t);
  if (dtype_is_signed_int(t)) {
    *lo = -std::ldexp(1.0, bits - 1);
    *hi = std::ldexp(1.0, bits - 1) - 1;
  } else {
    *lo = 0;
    *hi = std::ldexp(1.0, bits) - 1;
  }
}

Result<DType> dtype_attr(const ir::Node& node, const char* name) {
  const int64_t code = node.attr_int(name, 0);
  if (code == 0) return DType::kUndefined;
  auto t = dtype_from_onnx(static_cast<int>(code));
  if (!t) return invalid_argument(std::string("attribute '") + name + "' = " + std::to_string(code) + " is not an element type");
  return *t;
}

class QuantizeLinearKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 1);
    block_size_ = node.attr_int("block_size", 0);
    if (block_size_ < 0) return invalid_argument("attribute 'block_size' must be >= 0");
    opts_.saturate = node.attr_int("saturate", 1) != 0;
    SDX_ASSIGN_OR_RETURN(output_dtype_, dtype_attr(node, "output_dtype"), "QuantizeLinear");
    SDX_ASSIGN_OR_RETURN(precision_, dtype_attr(node, "precision"), "QuantizeLinear");
    if (precision_ != DType::kUndefined && !is_float_dtype(precision_))
      return invalid_argument(std::string("attribute 'precision' must be a floating type, got ") + dtype_name(precision_));
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const bool has_zp = ctx.has_input(2);
    if (!is_float_dtype(x.dtype()) || !is_float_dtype(scale.dtype()))
      return invalid_argument(std::string("QuantizeLinear needs floating x and y_scale, got ") + dtype_name(x.dtype()) +
                              " and " + dtype_name(scale.dtype()));
    DType out_t = output_dtype_ != DType::kUndefined ? output_dtype_ : DType::kUint8;
    if (has_zp) {
      const DType zt = ctx.input(2).dtype();
      if (output_dtype_ != DType::kUndefined && output_dtype_ != zt)
        return invalid_argument(std::string("output_dtype ") + dtype_name(output_dtype_) + " differs from y_zero_point type " +
                                dtype_name(zt));
      out_t = zt;
    }
    if (!is_quant_type(out_t)) return invalid_argument(std::string("cannot quantize to ") + dtype_name(out_t));
    SDX_ASSIGN_OR_RETURN(ParamIndex pidx, make_param_index(x.shape(), scale.shape(), axis_, block_size_), "y_scale");
    if (has_zp && ctx.input(2).numel() != scale.numel())
      return invalid_argument("y_zero_point shape " + ctx.input(2).shape().to_string() + " does not match y_scale shape " +
                              scale.shape().to_string());

    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, out_t, x.shape()), "QuantizeLinear output");
    if (x.dtype() == DType::kFloat32 && scale.dtype() == DType::kFloat32 && precision_ == DType::kUndefined &&
        pidx.mode != ParamIndex::kBlocked && (out_t == DType::kInt8 || out_t == DType::kUint8)) {
      if (out_t == DType::kInt8)
        quantize_f32(x.data<float>(), scale.data<float>(), has_zp ? ctx.input(2).data<int8_t>() : nullptr,
                     y.data<int8_t>(), x.numel(), pidx);
      else
        quantize_f32(x.data<float>(), scale.data<float>(), has_zp ? ctx.input(2).data<uint8_t>() : nullptr,
                     y.data<uint8_t>(), x.numel(), pidx);
      return Status::ok();
    }
    zero_packed_output(y);
    const std::vector<double> s = load_all_as<double>(scale);
    const std::vector<double> zp = has_zp ? load_all_as<double>(ctx.input(2)) : std::vector<double>(s.size(), 0.0);
    const DType div_t = precision_ != DType::kUndefined ? precision_ : promote_float(x.dtype(), scale.dtype());
    const bool round_operands = precision_ != DType::kUndefined;
    const bool int_out = dtype_is_int(out_t);
    double lo = 0, hi = 0;
    if (int_out) int_range(out_t, &lo, &hi);
    const int64_t n = x.numel();
    return visit_numeric_dtype(
        x.dtype(),
        [&](auto xe) -> Status {
          using XE = decltype(xe);
          return visit_numeric_dtype(
              out_t,
              [&](auto ye) -> Status {
                using YE = decltype(ye);
                for (int64_t i = 0; i < n; ++i) {
                  const auto p = static_cast<size_t>(pidx(i));
                  double xv = XE::load(x.raw_data(), i), sv = s[p];
                  if (round_operands) {
                    xv = round_to(div_t, xv);
                    sv = round_to(div_t, sv);
                  }
                  const double q = round_to(div_t, xv / sv);
                  if (int_out) {
                    double r = std::nearbyint(q);  // half to even, like np.rint
                    // np.rint(x).astype(int32): NaN and out-of-range give INT32_MIN.
                    r = static_cast<double>(elem_detail::trunc_i32(r)) + zp[p];
                    YE::store(y.raw_data(), i, static_cast<int64_t>(std::clamp(r, lo, hi)), opts_);
                  } else if (out_t == DType::kFloat4E2M1) {
                    YE::store(y.raw_data(), i, round_to(div_t, q + zp[p]), opts_);
                  } else {
                    YE::store(y.raw_data(), i, q, opts_);  // float8: zero point is zero by definition
                  }
                }
                return Status::ok();
              },
              "QuantizeLinear");
        },
        "QuantizeLinear");
  }

 private:
  int64_t axis_ = 1, block_size_ = 0;
  CastOptions opts_;
  DType output_dtype_ = DType::kUndefined, precision_ = DType::kUndefined;
};

class DequantizeLinearKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    axis_ = node.attr_int("axis", 1);
    block_size_ = node.attr_int("block_size", 0);
    if (block_size_ < 0) return invalid_argument("attribute 'block_size' must be >= 0");
    SDX_ASSIGN_OR_RETURN(output_dtype_, dtype_attr(node, "output_dtype"), "DequantizeLinear");
    if (output_dtype_ != DType::kUndefined && !is_float_dtype(output_dtype_))
      return invalid_argument(std::string("attribute 'output_dtype' must be a floating type, got ") + dtype_name(output_dtype_));
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const bool has_zp = ctx.has_input(2);
    if (!is_float_dtype(scale.dtype()))
      return invalid_argument(std::string("x_scale must be floating, got ") + dtype_name(scale.dtype()));
    if (!is_quant_type(x.dtype()) && x.dtype() != DType::kInt32)
      return invalid_argument(std::string("cannot dequantize element type ") + dtype_name(x.dtype()));
    SDX_ASSIGN_OR_RETURN(ParamIndex pidx, make_param_index(x.shape(), scale.shape(), axis_, block_size_), "x_scale");
    const bool fp_x = is_float8(x.dtype()) || x.dtype() == DType::kFloat4E2M1;
    if (has_zp) {
      const Tensor& z = ctx.input(2);
      if (z.dtype() != x.dtype())
        return invalid_argument(std::string("x_zero_point type ") + dtype_name(z.dtype()) + " differs from x type " +
                                dtype_name(x.dtype()));
      if (z.numel() != scale.numel())
        return invalid_argument("x_zero_point shape " + z.shape().to_string() + " does not match x_scale shape " +
                                scale.shape().to_string());
      if (is_float8(x.dtype()))
        for (int64_t i = 0; i < z.numel(); ++i)
          if (static_cast<const uint8_t*>(z.raw_data())[i] != 0)
            return invalid_argument("x_zero_point must be zero for float8 inputs");
    }
    const DType out_t = output_dtype_ != DType::kUndefined ? output_dtype_ : scale.dtype();
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, out_t, x.shape()), "DequantizeLinear output");
    if (scale.dtype() == DType::kFloat32 && out_t == DType::kFloat32 && pidx.mode != ParamIndex::kBlocked &&
        (x.dtype() == DType::kInt8 || x.dtype() == DType::kUint8)) {
      if (x.dtype() == DType::kInt8)
        dequantize_to_f32(x.data<int8_t>(), scale.data<float>(), has_zp ? ctx.input(2).data<int8_t>() : nullptr,
                          y.data<float>(), x.numel(), pidx);
      else
        dequantize_to_f32(x.data<uint8_t>(), scale.data<float>(), has_zp ? ctx.input(2).data<uint8_t>() : nullptr,
                          y.data<float>(), x.numel(), pidx);
      return Status::ok();
    }
    // onnx ignores float4 zero points
    const std::vector<double> zp = has_zp && !fp_x ? load_all_as<double>(ctx.input(2))
                                                   : std::vector<double>(static_cast<size_t>(scale.numel()), 0.0);
    const DType mul_t = promote_float(DType::kFloat32, scale.dtype());
    const std::vector<double> s = load_all_as<double>(scale);
    const int64_t n = x.numel();
    return visit_numeric_dtype(
        x.dtype(),
        [&](auto xe) -> Status {
          using XE = decltype(xe);
          return visit_numeric_dtype(
              out_t,
              [&](auto ye) -> Status {
                using YE = decltype(ye);
                const CastOptions opts;
                for (int64_t i = 0; i < n; ++i) {
                  const auto p = static_cast<size_t>(pidx(i));
                  // x.astype(float32) - zero_point, then * scale (numpy float32 arithmetic).
                  const double dx = static_cast<float>(static_cast<float>(static_cast<double>(XE::load(x.raw_data(), i))) -
                                                       static_cast<float>(zp[p]));
                  YE::store(y.raw_data(), i, round_to(mul_t, dx * s[p]), opts);
                }
                return Status::ok();
              },
              "DequantizeLinear");
        },
        "DequantizeLinear");
  }

 private:
  int64_t axis_ = 1, block_size_ = 0;
  DType output_dtype_ = DType::kUndefined;
};

// y = saturate(round(x / scale) + zero_point) to uint8, with scale and zero point
// computed from the range of x (extended to include 0), in float32 like the reference.
class DynamicQuantizeLinearKernel final : public backend::Kernel {
 public:
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat32)
      return invalid_argument(std::string("DynamicQuantizeLinear needs float input, got ") + dtype_name(x.dtype()));
    const float* xv = x.data<float>();
    const int64_t n = x.numel();
    // The range on the vector reductions; a NaN or an infinity in x takes the element loop, which skips
    // NaN (std::max / std::min keep the running value) as before.
    const float row_max = simd::row_max(xv, n), row_min = simd::row_min(xv, n);  // NaN if x holds one
    const bool finite = std::isfinite(row_max) && std::isfinite(row_min);
    float maxx = std::max(0.f, row_max), minx = std::min(0.f, row_min);
    if (!finite) {
      maxx = 0.f, minx = 0.f;
      for (int64_t i = 0; i < n; ++i) {
        maxx = std::max(maxx, xv[i]);
        minx = std::min(minx, xv[i]);
      }
    }
    const float scale = (maxx == minx ? 1.0f : (maxx - minx)) / 255.0f;
    const float initial_zp = 0.0f - minx / scale;
    const float zp = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kUint8, x.shape()), "output y");
    SDX_ASSIGN_OR_RETURN(Tensor ys, ctx.allocate_output(1, DType::kFloat32, Shape{}), "output y_scale");
    SDX_ASSIGN_OR_RETURN(Tensor yz, ctx.allocate_output(2, DType::kUint8, Shape{}), "output y_zero_point");
    uint8_t* yv = y.data<uint8_t>();
    if (finite && std::isfinite(scale)) {
      // x / scale is finite here, so quantize_row's saturate(rint(x / s) + zp) is the loop below.
      quantize_row(xv, scale, static_cast<int32_t>(zp), yv, n);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const float q = std::nearbyint(xv[i] / scale) + zp;
        yv[i] = static_cast<uint8_t>(std::clamp(q, 0.0f, 255.0f));
      }
    }
    *ys.data<float>() = scale;
    *yz.data<uint8_t>() = static_cast<uint8_t>(zp);
    return Status::ok();
  }
};

const backend::KernelRegistrar kQuantizeLinear({"QuantizeLinear", "", 10, backend::kAnyOpset,
                                                backend::kernel_factory<QuantizeLinearKernel>()});
const backend::KernelRegistrar kDequantizeLinear({"DequantizeLinear", "", 10, backend::kAnyOpset,
                                                  backend::kernel_factory<DequantizeLinearKernel>()});
const backend::KernelRegistrar kDynamicQuantizeLinear({"DynamicQuantizeLinear", "", 11, backend::kAnyOpset,
                                                       backend::kernel_factory<DynamicQuantizeLinearKernel>()});

}  // namespace
}  // namespace sdx::cpu
