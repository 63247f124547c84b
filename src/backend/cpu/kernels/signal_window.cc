// Window functions (HannWindow, HammingWindow, BlackmanWindow, ONNX opset 17) and
// MelWeightMatrix (opset 17). All produce tensors whose shape comes from scalar
// inputs; values are computed in double and cast to output_datatype (default float).
#include <cmath>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

enum class Window { kHann, kHamming, kBlackman };

// Writes values (double) into a fresh output of the requested type.
Status emit(backend::KernelContext& ctx, DType dtype, const Shape& shape, const std::vector<double>& values) {
  SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, dtype, shape), "");
  return dispatch<SDX_NUMERIC_TYPES>(dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) y.data<T>()[i] = store_as<T, double>(values[i]);
    return Status::ok();
  }, ctx.node().op_type());
}

Result<DType> output_type(const ir::Node& node) {
  const int64_t code = node.attr_int("output_datatype", 1);
  auto t = dtype_from_onnx(static_cast<int>(code));
  if (!t || *t == DType::kString || *t == DType::kBool || !dtype_is_byte_addressable(*t))
    return invalid_argument("unsupported output_datatype " + std::to_string(code));
  return *t;
}

class WindowKernel final : public backend::Kernel {
 public:
  explicit WindowKernel(Window kind) : kind_(kind) {}

  Status init(const ir::Node& node) override {
    periodic_ = node.attr_int("periodic", 1) != 0;
    SDX_ASSIGN_OR_RETURN(out_type_, output_type(node), "");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    Result<double> sz = read_double_scalar(ctx.input(0), "size");
    if (!sz.is_ok() || sz.value() < 0) return invalid_argument("size must be a nonnegative scalar");
    const int64_t n = static_cast<int64_t>(sz.value());
    const double denom = static_cast<double>(periodic_ ? n : n - 1);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i);
      double r;
      switch (kind_) {
        case Window::kHann: {
          const double s = std::sin(x * M_PI / denom);
          r = s * s;
          break;
        }
        case Window::kHamming: {
          const double alpha = 25.0 / 46.0;
          r = alpha - std::cos(x * M_PI * 2 / denom) * (1 - alpha);
          break;
        }
        default:
          r = std::cos(x * (M_PI * 2) / denom) * -0.5;
          r += std::cos(x * (M_PI * 4) / denom) * 0.08;
          r += 0.42;
      }
      v[static_cast<size_t>(i)] = r;
    }
    return emit(ctx, out_type_, Shape{n}, v);
  }

 private:
  Window kind_;
  bool periodic_ = true;
  DType out_type_ = DType::kFloat32;
};

// Triangular mel filters: [dft_length/2 + 1, num_mel_bins], following the reference's
// bin placement (integer FFT bins from evenly spaced mel frequencies).
class MelWeightMatrixKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    SDX_ASSIGN_OR_RETURN(out_type_, output_type(node), "");
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    double v[5];
    for (int i = 0; i < 5; ++i) {
      Result<double> r = read_double_scalar(ctx.input(i), "input " + std::to_string(i));
      if (!r.is_ok()) return invalid_argument("all inputs must be scalars");
      v[i] = r.value();
    }
    const double mel_bins_d = v[0], dft_len_d = v[1], rate_d = v[2], lower = v[3], upper = v[4];
    const int64_t mel_bins = static_cast<int64_t>(mel_bins_d), dft_len = static_cast<int64_t>(dft_len_d), rate = static_cast<int64_t>(rate_d);
    if (mel_bins < 1 || dft_len < 1 || rate < 1) return invalid_argument("num_mel_bins, dft_length and sample_rate must be positive");
    if (lower < 0 || upper <= lower) return invalid_argument("need 0 <= lower_edge_hertz < upper_edge_hertz");
    const int64_t spec_bins = dft_len / 2 + 1;
    // Mel endpoints in float, as the reference computes them from float inputs.
    const float low_mel = 2595.0f * std::log1p(static_cast<float>(lower) / 700.0f) / static_cast<float>(std::log(10.0));
    const float high_mel = 2595.0f * std::log1p(static_cast<float>(upper) / 700.0f) / static_cast<float>(std::log(10.0));
    const float step = (high_mel - low_mel) / static_cast<float>(mel_bins + 2);
    std::vector<int64_t> fbin(static_cast<size_t>(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double mel = static_cast<double>(i) * static_cast<double>(step) + static_cast<double>(low_mel);
      const double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
      fbin[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate)));
      if (fbin[static_cast<size_t>(i)] < 0 || fbin[static_cast<size_t>(i)] >= spec_bins)
        return invalid_argument("upper_edge_hertz maps past the last spectrogram bin");
    }
    std::vector<double> out(static_cast<size_t>(spec_bins * mel_bins), 0.0);
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t lo = fbin[static_cast<size_t>(i)], c = fbin[static_cast<size_t>(i + 1)], hi = fbin[static_cast<size_t>(i + 2)];
      if (c == lo) out[static_cast<size_t>(c * mel_bins + i)] = 1.0;
      else
        for (int64_t j = lo; j <= c; ++j) out[static_cast<size_t>(j * mel_bins + i)] = static_cast<double>(j - lo) / static_cast<double>(c - lo);
      if (hi > c)
        for (int64_t j = c; j < hi; ++j) out[static_cast<size_t>(j * mel_bins + i)] = static_cast<double>(hi - j) / static_cast<double>(hi - c);
    }
    return emit(ctx, out_type_, Shape{spec_bins, mel_bins}, out);
  }

 private:
  DType out_type_ = DType::kFloat32;
};

template <Window kKind>
backend::KernelFactory window_factory() {
  return [](const ir::Node& node) -> Result<std::unique_ptr<backend::Kernel>> {
    auto k = std::make_unique<WindowKernel>(kKind);
    SDX_RETURN_IF_ERROR(k->init(node), node.describe());
    return std::unique_ptr<backend::Kernel>(std::move(k));
  };
}

const backend::KernelRegistrar kHann({"HannWindow", "", 17, backend::kAnyOpset, window_factory<Window::kHann>()});
const backend::KernelRegistrar kHamming({"HammingWindow", "", 17, backend::kAnyOpset, window_factory<Window::kHamming>()});
const backend::KernelRegistrar kBlackman({"BlackmanWindow", "", 17, backend::kAnyOpset, window_factory<Window::kBlackman>()});
const backend::KernelRegistrar kMel({"MelWeightMatrix", "", 17, backend::kAnyOpset, backend::kernel_factory<MelWeightMatrixKernel>()});

}  // namespace
}  // namespace sdx::cpu
