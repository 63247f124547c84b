// BatchNormalization and LRN: per-channel normalizations of [N, C, spatial...].
//
// BatchNormalization in inference mode uses input_mean / input_var. With
// training_mode (opset 14+) it normalizes with the batch statistics and, when
// asked, outputs running_mean = mean * momentum + batch_mean * (1 - momentum) (same for
// the variance). Pre-opset-14 training outputs (saved mean/var) are not computed.
//
// Float32 in inference mode (what stays of a BatchNormalization no convolution absorbed, e.g. one
// after a Relu): a = scale / sqrt(var + eps) and b = B - mean * a per channel, in double, rounded to
// float once; then y = x * a + b in float32 on the vector kernels (two roundings, as onnxruntime's
// float kernel; the other types compute every element in double). The bound form computes a and b once
// when the parameters are initializers.
#include <cmath>
#include <vector>

#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/kernels/util/reduce_util.h"
#include "backend/cpu/simd/vector_ops.h"
#include "backend/cpu/threading/thread_pool.h"
#include "core/tensor_values.h"
#include "core/type_dispatch.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

// [N, C, spatial]: which channel a row of `spatial` elements belongs to.
struct BnGeometry {
  int64_t batch = 0, channels = 0, spatial = 0;
};

Result<BnGeometry> bn_geometry(const Tensor& x, const Tensor* const params[4]) {
  if (x.rank() < 1) return invalid_argument("BatchNormalization: input must have rank >= 1");
  BnGeometry g;
  g.batch = x.shape().dim(0);
  g.channels = x.rank() > 1 ? x.shape().dim(1) : 1;
  g.spatial = x.shape().size_between(2, x.rank());
  for (int i = 0; i < 4; ++i)
    if (params[i]->numel() != g.channels)
      return invalid_argument("BatchNormalization: input " + std::to_string(i + 1) + " must have " +
                              std::to_string(g.channels) + " elements, got shape " + params[i]->shape().to_string());
  return g;
}

// The float32 inference form's per-channel a (first C) and b (next C).
Result<std::vector<float>> bn_affine(const Tensor* const params[4], float epsilon) {
  static const char* const kNames[4] = {"BatchNormalization scale", "BatchNormalization B",
                                        "BatchNormalization input_mean", "BatchNormalization input_var"};
  std::vector<double> p[4];
  for (int i = 0; i < 4; ++i) {
    SDX_ASSIGN_OR_RETURN(p[i], read_doubles(*params[i], kNames[i], RealTypes::kFloat), "");
  }
  const size_t c = p[0].size();
  std::vector<float> ab(2 * c);
  for (size_t k = 0; k < c; ++k) {
    const double a = p[0][k] / std::sqrt(p[3][k] + static_cast<double>(epsilon));
    ab[k] = static_cast<float>(a);
    ab[c + k] = static_cast<float>(p[1][k] - p[2][k] * a);
  }
  return ab;
}

// y = x * a[c] + b[c], row by row, split over the pool.
void bn_affine_rows(const BnGeometry& g, const float* ab, const float* x, float* y) {
  const int64_t rows = g.batch * g.channels;
  parallel_for(rows, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, g.spatial)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % g.channels;
      simd::binary_vs(simd::BinaryOp::kMul, x + r * g.spatial, ab[c], y + r * g.spatial, g.spatial);
      simd::binary_vs(simd::BinaryOp::kAdd, y + r * g.spatial, ab[g.channels + c], y + r * g.spatial, g.spatial);
    }
  });
}

class BatchNormKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    epsilon_ = node.attr_float("epsilon", 1e-5f);
    momentum_ = node.attr_float("momentum", 0.9f);
    training_ = node.opset() >= 14 && node.attr_int("training_mode", 0) != 0;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* const params[4] = {&ctx.input(1), &ctx.input(2), &ctx.input(3), &ctx.input(4)};
    SDX_ASSIGN_OR_RETURN(BnGeometry geo, bn_geometry(x, params), "");
    const int64_t batch = geo.batch, channels = geo.channels, spatial = geo.spatial;
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "BatchNormalization");
    if (float_inference(x)) {
      SDX_ASSIGN_OR_RETURN(std::vector<float> ab, bn_affine(params, epsilon_), "");
      bn_affine_rows(geo, ab.data(), x.data<float>(), y.data<float>());
      return Status::ok();
    }
    // Per-channel parameters in double.
    SDX_ASSIGN_OR_RETURN(std::vector<double> scale, read_doubles(ctx.input(1), "BatchNormalization scale", RealTypes::kFloat), "");
    SDX_ASSIGN_OR_RETURN(std::vector<double> bias, read_doubles(ctx.input(2), "BatchNormalization B", RealTypes::kFloat), "");
    SDX_ASSIGN_OR_RETURN(std::vector<double> mean, read_doubles(ctx.input(3), "BatchNormalization input_mean", RealTypes::kFloat), "");
    SDX_ASSIGN_OR_RETURN(std::vector<double> var, read_doubles(ctx.input(4), "BatchNormalization input_var", RealTypes::kFloat), "");
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          std::vector<double> use_mean = mean, use_var = var;
          if (training_) {
            const double cnt = static_cast<double>(batch * spatial);
            std::vector<double> bm(static_cast<size_t>(channels), 0.0), bv(static_cast<size_t>(channels), 0.0);
            for (int64_t n = 0; n < batch; ++n)
              for (int64_t c = 0; c < channels; ++c)
                for (int64_t k = 0; k < spatial; ++k) bm[static_cast<size_t>(c)] += load_as<double>(px[(n * channels + c) * spatial + k]);
            for (double& m : bm) m /= cnt;
            for (int64_t n = 0; n < batch; ++n)
              for (int64_t c = 0; c < channels; ++c)
                for (int64_t k = 0; k < spatial; ++k) {
                  double d = load_as<double>(px[(n * channels + c) * spatial + k]) - bm[static_cast<size_t>(c)];
                  bv[static_cast<size_t>(c)] += d * d;
                }
            for (double& v : bv) v /= cnt;
            std::vector<double> rm(static_cast<size_t>(channels)), rv(static_cast<size_t>(channels));
            const double mom = momentum_;
            for (size_t c = 0; c < rm.size(); ++c) {
              rm[c] = mean[c] * mom + bm[c] * (1 - mom);
              rv[c] = var[c] * mom + bv[c] * (1 - mom);
            }
            use_mean = bm;
            use_var = bv;
            const std::vector<double>* outs[2] = {&rm, &rv};
            for (int o = 1; o < ctx.num_outputs() && o <= 2; ++o) {
              if (!ctx.wants_output(o)) continue;
              const Tensor& like = ctx.input(o + 2);
              SDX_ASSIGN_OR_RETURN(Tensor t, ctx.allocate_output(o, like.dtype(), like.shape()), "BatchNormalization");
              SDX_RETURN_IF_ERROR(dispatch<SDX_FLOAT_TYPES>(
                  like.dtype(),
                  [&](auto tg) -> Status {
                    using S = typename decltype(tg)::type;
                    for (int64_t c = 0; c < channels; ++c) t.data<S>()[c] = store_as<S>((*outs[o - 1])[static_cast<size_t>(c)]);
                    return Status::ok();
                  },
                  "BatchNormalization"), "");
            }
          }
          for (int64_t c = 0; c < channels; ++c) {
            const size_t cu = static_cast<size_t>(c);
            const double a = scale[cu] / std::sqrt(use_var[cu] + static_cast<double>(epsilon_));
            const double b = bias[cu] - use_mean[cu] * a;
            for (int64_t n = 0; n < batch; ++n) {
              const int64_t off = (n * channels + c) * spatial;
              for (int64_t k = 0; k < spatial; ++k) py[off + k] = store_as<T>(load_as<double>(px[off + k]) * a + b);
            }
          }
          return Status::ok();
        },
        "BatchNormalization");
  }

  BoundResult prepare(const backend::PrepareContext& ctx) const override {
    if (ctx.num_inputs() < 5) return no_bound_form();
    for (int i = 0; i < 5; ++i)
      if (!ctx.has_input(i) || (i > 0 && !ctx.input_is_constant(i))) return no_bound_form();
    const Tensor& x = ctx.input(0);
    if (!float_inference(x) || !output_matches(ctx, 0, x.dtype(), x.shape())) return no_bound_form();
    const Tensor* const params[4] = {&ctx.input(1), &ctx.input(2), &ctx.input(3), &ctx.input(4)};
    Result<BnGeometry> g = bn_geometry(x, params);
    if (!g.is_ok()) return no_bound_form();
    Result<std::vector<float>> ab = bn_affine(params, epsilon_);
    if (!ab.is_ok()) return no_bound_form();
    return backend::bind_call([g = g.value(), ab = std::move(ab.value()), px = x.data<float>(),
                               py = ctx.output(0).data<float>()] {
      bn_affine_rows(g, ab.data(), px, py);
      return Status::ok();
    });
  }

 private:
  bool float_inference(const Tensor& x) const { return !training_ && x.dtype() == DType::kFloat32; }

  float epsilon_ = 1e-5f;
  float momentum_ = 0.9f;
  bool training_ = false;
};

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
// window [c - floor((size-1)/2), c + ceil((size-1)/2)].
class LrnKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    alpha_ = node.attr_float("alpha", 1e-4f);
    beta_ = node.attr_float("beta", 0.75f);
    bias_ = node.attr_float("bias", 1.0f);
    size_ = node.attr_int("size", 0);
    if (size_ <= 0) return invalid_argument("LRN: attribute 'size' must be positive");
    return Status::ok();
  }
  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) return invalid_argument("LRN: input must have rank >= 2, got " + x.shape().to_string());
    const int64_t batch = x.shape().dim(0), channels = x.shape().dim(1);
    const int64_t spatial = x.shape().size_between(2, x.rank());
    const int64_t lo = (size_ - 1) / 2, hi = size_ - 1 - lo;
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), x.shape()), "LRN");
    return dispatch<SDX_FLOAT_TYPES>(
        x.dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          const double k = static_cast<double>(alpha_) / static_cast<double>(size_);
          for (int64_t n = 0; n < batch; ++n)
            for (int64_t c = 0; c < channels; ++c) {
              const int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi >= channels ? channels - 1 : c + hi;
              for (int64_t s = 0; s < spatial; ++s) {
                double sq = 0;
                for (int64_t cc = c0; cc <= c1; ++cc) {
                  double v = load_as<double>(px[(n * channels + cc) * spatial + s]);
                  sq += v * v;
                }
                const int64_t i = (n * channels + c) * spatial + s;
                py[i] = store_as<T>(load_as<double>(px[i]) / std::pow(bias_ + k * sq, static_cast<double>(beta_)));
              }
            }
          return Status::ok();
        },
        "LRN");
  }

 private:
  float alpha_ = 1e-4f, beta_ = 0.75f, bias_ = 1.0f;
  int64_t size_ = 0;
};

const backend::KernelRegistrar kBatchNorm(
    {"BatchNormalization", "", 1, backend::kAnyOpset, backend::kernel_factory<BatchNormKernel>()});
const backend::KernelRegistrar kLrn({"LRN", "", 1, backend::kAnyOpset, backend::kernel_factory<LrnKernel>()});

}  // namespace
}  // namespace sdx::cpu
