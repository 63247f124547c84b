#include "backend/cpu/conv/frames_conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels/util/activation.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/onednn/onednn_matmul.h"
#include "backend/cpu/tensor/channel_blocked.h"

namespace sdx::cpu {
namespace {

// The 1-D geometry of a plan this path takes.
struct Frames {
  int64_t len = 0, taps = 0, stride = 1, dilation = 1, pad = 0, frames = 0;
};

std::optional<Frames> frames_of(const ConvPlan& p, const ConvLayouts& layouts) {
  if (p.C != 1 || p.G != 1 || layouts.any() || p.out_shape.numel() == 0) return std::nullopt;
  const WindowGeometry& g = p.g;
  int axis = 0;
  if (g.rank() == 2) {  // one row: 1 x K over 1 x L
    if (p.in[0] != 1 || g.kernel[0] != 1 || g.out[0] != 1 || g.pads[0] != 0 || g.pads[2] != 0) return std::nullopt;
    axis = 1;
  } else if (g.rank() != 1) {
    return std::nullopt;
  }
  Frames f{p.in[static_cast<size_t>(axis)], g.kernel[static_cast<size_t>(axis)], g.strides[static_cast<size_t>(axis)],
           g.dilations[static_cast<size_t>(axis)], g.pads[static_cast<size_t>(axis)], g.out[static_cast<size_t>(axis)]};
  if (f.taps < kFramesConvMinTaps) return std::nullopt;
  return f;
}

class FramesConv {
 public:
  static std::unique_ptr<FramesConv> make(const ConvPlan& p, const FusedActivation& act, const ConvLayouts& layouts) {
    auto f = frames_of(p, layouts);
    if (!f) return nullptr;
    auto mm = OneDnnMatMul::make(f->frames, f->taps, p.M, FusedActivation(), false);
    if (!mm) return nullptr;
    auto c = std::unique_ptr<FramesConv>(new FramesConv());
    c->f_ = *f;
    c->n_ = p.N;
    c->m_ = p.M;
    c->act_ = act;
    c->mm_ = std::move(mm);
    c->wt_.resize(static_cast<size_t>(f->taps * p.M));
    c->col_.resize(static_cast<size_t>(f->frames * f->taps));
    c->yt_.resize(static_cast<size_t>(f->frames * p.M));
    return c;
  }

  // W [M, 1, (1,) K] -> W^T [K, M], packed.
  Status pack_weights(const float* w, const backend::PackedWeightsRef& packed = {}) {
    for (int64_t m = 0; m < m_; ++m)
      for (int64_t k = 0; k < f_.taps; ++k) wt_[static_cast<size_t>(k * m_ + m)] = w[m * f_.taps + k];
    return mm_->pack_weights(wt_.data(), packed);
  }

  // The transposed weights are needed only to pack them: released once packed for good.
  void drop_staging() { std::vector<float>().swap(wt_); }

  Status run(const float* x, const float* b, const float* r, float* y) {
    const int64_t O = f_.frames, K = f_.taps, M = m_;
    for (int64_t n = 0; n < n_; ++n) {
      const float* xn = x + n * f_.len;
      for (int64_t o = 0; o < O; ++o) {
        float* row = col_.data() + o * K;
        const int64_t start = o * f_.stride - f_.pad, last = start + (K - 1) * f_.dilation;
        if (f_.dilation == 1 && start >= 0 && last < f_.len) {  // the whole window inside x
          std::memcpy(row, xn + start, static_cast<size_t>(K) * sizeof(float));
          continue;
        }
        for (int64_t k = 0; k < K; ++k) {
          const int64_t i = start + k * f_.dilation;
          row[k] = i >= 0 && i < f_.len ? xn[i] : 0.f;
        }
      }
      SDX_RETURN_IF_ERROR(mm_->run(col_.data(), nullptr, yt_.data()), "");
      float* yn = y + n * M * O;
      const float* rn = r ? r + n * M * O : nullptr;
      // Transposed in 16 x 16 tiles, so both sides stay in cache lines already read.
      constexpr int64_t kTile = 16;
      act_.visit([&](auto act) {
        for (int64_t m0 = 0; m0 < M; m0 += kTile)
          for (int64_t o0 = 0; o0 < O; o0 += kTile)
            for (int64_t m = m0; m < std::min(M, m0 + kTile); ++m) {
              const float bm = b ? b[m] : 0.f;
              for (int64_t o = o0; o < std::min(O, o0 + kTile); ++o) {
                float v = yt_[static_cast<size_t>(o * M + m)];
                if (b) v = v + bm;
                if (rn) v = v + rn[m * O + o];
                yn[m * O + o] = act(v);
              }
            }
      });
    }
    return Status::ok();
  }

 private:
  FramesConv() = default;
  Frames f_;
  int64_t n_ = 0, m_ = 0;
  FusedActivation act_;
  std::unique_ptr<OneDnnMatMul> mm_;
  std::vector<float> wt_, col_, yt_;
};

}  // namespace

std::optional<Status> run_frames_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x, const Tensor& w,
                                      const Tensor* b, Tensor& y, const Tensor* r, ConvLayouts layouts) {
  if (!conv_operands_float32(x, w, b, r)) return std::nullopt;
  std::unique_ptr<FramesConv> c = FramesConv::make(p, act, layouts);
  if (!c) return std::nullopt;
  SDX_RETURN_IF_ERROR(c->pack_weights(w.data<float>()), "Conv");
  return c->run(x.data<float>(), b ? b->data<float>() : nullptr, r ? r->data<float>() : nullptr, y.data<float>());
}

std::unique_ptr<backend::BoundKernel> bind_frames_conv(const ConvPlan& p, const FusedActivation& act,
                                                       const backend::PrepareContext& ctx, ConvLayouts layouts) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = optional_input(ctx, 2);
  const Tensor* r = optional_input(ctx, 3);
  if (!conv_operands_float32(x, w, b, r)) return nullptr;
  std::unique_ptr<FramesConv> c = FramesConv::make(p, act, layouts);
  if (!c) return nullptr;
  // Weights from an initializer are packed once, now; others before every call.
  const bool packed = ctx.input_is_constant(1);
  if (packed) {
    if (!c->pack_weights(w.data<float>(), {ctx.packed_weights(), ctx.packed_key_prefix()}).is_ok()) return nullptr;
    c->drop_staging();
  }
  return backend::bind_call([c = std::shared_ptr<FramesConv>(std::move(c)), packed, px = x.data<float>(),
                             pw = w.data<float>(), pb = b ? b->data<float>() : nullptr,
                             pr = r ? r->data<float>() : nullptr, py = ctx.output(0).data<float>()] {
    if (!packed) SDX_RETURN_IF_ERROR(c->pack_weights(pw), "");
    return c->run(px, pb, pr, py);
  });
}

}  // namespace sdx::cpu
