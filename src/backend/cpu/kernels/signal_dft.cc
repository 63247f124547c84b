// DFT (ONNX opsets 17, 20) and STFT (opset 17).
//
// Complex values use a trailing axis of size 2 (real, imaginary); real signals have a
// trailing axis of size 1. DFT transforms one signal axis, zero-padding or truncating
// it to dft_length; onesided keeps the n/2+1 non-redundant bins (forward) or treats
// the input as such a half spectrum and returns a real signal (inverse, like irfft).
// Full-spectrum transforms use the mixed-radix FFT in seq_fft.h: in double for real
// signals, in the signal's precision for complex ones (float for 16-bit types), as the
// reference does; the half-spectrum inverse is a direct sum in double.
#include <cmath>
#include <complex>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/cpu/kernels/util/seq_fft.h"
#include "backend/cpu/kernels/util/seq_util.h"
#include "core/tensor_values.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using cplx = std::complex<double>;

// twiddle[k] = exp(sign * 2*pi*i * k / n).
std::vector<cplx> twiddles(int64_t n, double sign) {
  std::vector<cplx> w(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const double a = sign * 2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n);
    w[static_cast<size_t>(k)] = cplx(std::cos(a), std::sin(a));
  }
  return w;
}

// out[k] = sum_t in[t] * w[(k*t) mod n] for k < bins, with in zero beyond its size.
void direct_dft(const std::vector<cplx>& in, const std::vector<cplx>& w, int64_t bins, std::vector<cplx>* out) {
  const int64_t n = static_cast<int64_t>(w.size());
  const int64_t m = std::min<int64_t>(static_cast<int64_t>(in.size()), n);
  out->assign(static_cast<size_t>(bins), cplx(0, 0));
  for (int64_t k = 0; k < bins; ++k) {
    cplx acc(0, 0);
    for (int64_t t = 0; t < m; ++t) acc += in[static_cast<size_t>(t)] * w[static_cast<size_t>((k * t) % n)];
    (*out)[static_cast<size_t>(k)] = acc;
  }
}

class DFTKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    opset_ = node.opset();
    inverse_ = node.attr_int("inverse", 0) != 0;
    onesided_ = node.attr_int("onesided", 0) != 0;
    axis_ = node.attr_int("axis", opset_ >= 20 ? -2 : 1);
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    if (r < 2 || (x.shape()[r - 1] != 1 && x.shape()[r - 1] != 2))
      return invalid_argument("input must end in a complex axis of size 1 (real) or 2, got " + x.shape().to_string());
    int64_t axis = axis_;
    if (opset_ >= 20 && ctx.has_input(2)) {
      Result<double> a = read_double_scalar(ctx.input(2), "axis");
      if (!a.is_ok()) return invalid_argument("axis must be a scalar");
      axis = static_cast<int64_t>(a.value());
    }
    if (axis < -r || axis >= r) return invalid_argument("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
    if (axis < 0) axis += r;
    if (axis == r - 1) return invalid_argument("axis must not be the trailing complex axis");
    const int64_t m = x.shape()[static_cast<int>(axis)];
    int64_t n = inverse_ && onesided_ ? 2 * (m - 1) : m;
    if (ctx.has_input(1)) {
      Result<double> v = read_double_scalar(ctx.input(1), "dft_length");
      if (!v.is_ok()) return invalid_argument("dft_length must be a scalar");
      n = static_cast<int64_t>(v.value());
    }
    if (n < 1) return invalid_argument("dft_length must be positive, got " + std::to_string(n));
    const bool complex_in = x.shape()[r - 1] == 2;
    const bool real_out = inverse_ && onesided_;
    const int64_t bins = !inverse_ && onesided_ ? n / 2 + 1 : n;
    std::vector<int64_t> odims = x.shape().dims();
    odims[static_cast<size_t>(axis)] = bins;
    odims.back() = real_out ? 1 : 2;
    SDX_ASSIGN_OR_RETURN(Shape oshape, Shape::make(odims), "output shape");
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), oshape), "");
    const int64_t outer = x.shape().size_between(0, static_cast<int>(axis));
    const int64_t inner = x.shape().size_between(static_cast<int>(axis) + 1, r - 1);
    const int64_t cin = x.shape()[r - 1], cout = odims.back();
    const std::vector<cplx> w = real_out ? twiddles(n, 1.0) : std::vector<cplx>();
    return dispatch<SDX_FLOAT_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      // Precision follows the reference's numpy promotion: a real signal is transformed
      // in double, a complex one in its own precision.
      const seq::FftPlan<C> plan(real_out || !complex_in ? 1 : n);
      const seq::FftPlan<double> plan_d(real_out || complex_in ? 1 : n);
      std::vector<seq::Cx<C>> buf(static_cast<size_t>(n));
      std::vector<seq::Cx<double>> buf_d(static_cast<size_t>(n));
      std::vector<cplx> sig, spec;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto load = [&](int64_t t) {
            const int64_t src = ((o * m + t) * inner + i) * cin;
            return cplx(load_as<double>(xd[src]), complex_in ? load_as<double>(xd[src + 1]) : 0.0);
          };
          auto put = [&](int64_t k, double re, double im) {
            const int64_t dst = ((o * bins + k) * inner + i) * cout;
            yd[dst] = store_as<T, double>(re);
            if (cout == 2) yd[dst + 1] = store_as<T, double>(im);
          };
          if (!real_out && !complex_in) {
            for (int64_t t = 0; t < n; ++t) buf_d[static_cast<size_t>(t)] = {t < m ? load(t).real() : 0.0, 0.0};
            plan_d.run(buf_d.data(), !inverse_, inverse_ ? 1.0 / static_cast<double>(n) : 1.0);
            for (int64_t k = 0; k < bins; ++k) put(k, buf_d[static_cast<size_t>(k)].r, buf_d[static_cast<size_t>(k)].i);
            continue;
          }
          if (!real_out) {
            for (int64_t t = 0; t < n; ++t) {
              const cplx v = t < m ? load(t) : cplx(0, 0);
              buf[static_cast<size_t>(t)] = {static_cast<C>(v.real()), static_cast<C>(v.imag())};
            }
            plan.run(buf.data(), !inverse_, inverse_ ? static_cast<C>(1.0 / static_cast<double>(n)) : C(1));
            for (int64_t k = 0; k < bins; ++k) put(k, buf[static_cast<size_t>(k)].r, buf[static_cast<size_t>(k)].i);
            continue;
          }
          // Rebuild the Hermitian full spectrum from the half spectrum (irfft): the DC
          // and (even n) Nyquist bins are taken as real.
          sig.assign(static_cast<size_t>(n), cplx(0, 0));
          for (int64_t t = 0; t < m && t <= n / 2; ++t) {
            const cplx v = load(t);
            const bool self_conj = t == 0 || 2 * t == n;
            sig[static_cast<size_t>(t)] = self_conj ? cplx(v.real(), 0) : v;
            if (!self_conj) sig[static_cast<size_t>(n - t)] = std::conj(v);
          }
          direct_dft(sig, w, bins, &spec);
          for (int64_t k = 0; k < bins; ++k) put(k, spec[static_cast<size_t>(k)].real() / static_cast<double>(n), 0.0);
        }
      return Status::ok();
    }, "DFT");
  }

 private:
  int opset_ = 20;
  bool inverse_ = false, onesided_ = false;
  int64_t axis_ = -2;
};

// STFT: signal [batch, length, 1|2] -> [batch, frames, bins, 2], each frame the DFT of
// frame_length samples (times the window) starting every frame_step samples.
class STFTKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    onesided_ = node.attr_int("onesided", 1) != 0;
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 3 || (x.shape()[2] != 1 && x.shape()[2] != 2))
      return invalid_argument("signal must be [batch, length, 1 or 2], got " + x.shape().to_string());
    const int64_t B = x.shape()[0], len = x.shape()[1], cin = x.shape()[2];
    Result<double> step_d = read_double_scalar(ctx.input(1), "frame_step");
    if (!step_d.is_ok() || step_d.value() < 1) return invalid_argument("frame_step must be a positive scalar");
    const int64_t step = static_cast<int64_t>(step_d.value());
    const bool has_window = ctx.has_input(2);
    int64_t flen = has_window ? ctx.input(2).numel() : len;
    if (has_window && ctx.input(2).rank() != 1) return invalid_argument("window must be 1-D");
    if (ctx.has_input(3)) {
      Result<double> fl = read_double_scalar(ctx.input(3), "frame_length");
      if (!fl.is_ok()) return invalid_argument("frame_length must be a scalar");
      if (has_window && static_cast<int64_t>(fl.value()) != flen) return invalid_argument("frame_length differs from the window length");
      flen = static_cast<int64_t>(fl.value());
    }
    if (flen < 1 || flen > len) return invalid_argument("frame_length " + std::to_string(flen) + " must be in [1, signal length]");
    if (cin == 2 && onesided_) return invalid_argument("onesided STFT needs a real signal");
    const int64_t frames = 1 + (len - flen) / step;
    const int64_t bins = onesided_ ? flen / 2 + 1 : flen;
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, x.dtype(), Shape{B, frames, bins, 2}), "");
    std::vector<double> window(static_cast<size_t>(flen), 1.0);
    if (has_window) {
      SDX_RETURN_IF_ERROR((dispatch<SDX_FLOAT_TYPES>(ctx.input(2).dtype(), [&](auto tag) -> Status {
        using W = typename decltype(tag)::type;
        for (int64_t i = 0; i < flen; ++i) window[static_cast<size_t>(i)] = load_as<double>(ctx.input(2).data<W>()[i]);
        return Status::ok();
      }, "STFT window")), "");
    }
    return dispatch<SDX_FLOAT_TYPES>(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      const seq::FftPlan<C> plan(flen);
      std::vector<seq::Cx<C>> frame(static_cast<size_t>(flen));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t f = 0; f < frames; ++f) {
          for (int64_t t = 0; t < flen; ++t) {
            const int64_t src = (b * len + f * step + t) * cin;
            const C wt = static_cast<C>(window[static_cast<size_t>(t)]);
            frame[static_cast<size_t>(t)] = {load_as<C>(xd[src]) * wt, cin == 2 ? load_as<C>(xd[src + 1]) * wt : C(0)};
          }
          plan.run(frame.data(), true, C(1));
          for (int64_t k = 0; k < bins; ++k) {
            T* o = yd + ((b * frames + f) * bins + k) * 2;
            o[0] = store_as<T, C>(frame[static_cast<size_t>(k)].r);
            o[1] = store_as<T, C>(frame[static_cast<size_t>(k)].i);
          }
        }
      return Status::ok();
    }, "STFT");
  }

 private:
  bool onesided_ = true;
};

const backend::KernelRegistrar kDFT({"DFT", "", 17, backend::kAnyOpset, backend::kernel_factory<DFTKernel>()});
const backend::KernelRegistrar kSTFT({"STFT", "", 17, backend::kAnyOpset, backend::kernel_factory<STFTKernel>()});

}  // namespace
}  // namespace sdx::cpu
