// See depthwise_conv.h.
#include "backend/cpu/conv/depthwise_conv.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/conv/depthwise_kernels.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/conv/thread_scratch.h"
#include "backend/cpu/simd/isa.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

const dw::Kernels& active_kernels() {
  return simd::active_level(dw::avx512_kernels(), dw::avx2_kernels(), *dw::scalar_kernels());
}

// W [C][KH][KW] -> [C/16][KH][KW][16].
void block_weights(const float* w, int64_t C, int64_t ks, float* out) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < ks; ++k) out[((c / dw::kBlock) * ks + k) * dw::kBlock + c % dw::kBlock] = w[c * ks + k];
}

}  // namespace

bool depthwise_conv_applies(const ConvPlan& p) {
  const int rank = p.g.rank();
  // A single input channel (group 1) is an ordinary convolution, whose output channels share every
  // input row (an STFT as a 1 -> 257 channel conv with a 512-tap kernel at stride 160): im2col +
  // gemm reads each once; so does a large channel multiplier.
  if ((rank != 1 && rank != 2) || p.Cg != 1 || p.G < 2 || p.Mg > kMaxMultiplier || p.out_shape.numel() == 0)
    return false;
  for (int64_t pad : p.g.pads)
    if (pad < 0) return false;
  return true;
}

struct DepthwiseConv::Impl {
  int64_t N = 0, C = 0, M = 0, Mg = 1, is = 0, os = 0, ks = 0;
  ConvLayouts layouts;
  bool blocked = false;       // the NCHW16c loops
  bool constant_w = false;    // w_blocked holds the constant weights (blocked only)
  std::vector<int64_t> tap_offset;
  dw::Geometry g;
  const dw::Kernels* kernels = nullptr;
  FusedActivation act;
  // Blocked: the weights in the loops' layout; X, Y and R converted from and to NCHW when one of
  // them is not blocked.
  std::vector<float> w_blocked, x_buf, y_buf, r_buf;

  // How run() splits the work over `threads`: items of `band_rows` output rows, `bands` per plane.
  struct Split {
    int64_t planes = 0, bands = 1, band_rows = 0;
  };
  Split split(int threads) const;
  // Floats of a thread's padded rows that an NCHW item uses (0 when blocked).
  size_t scratch_floats(const Split& s) const {
    return blocked ? 0 : static_cast<size_t>(g.end_row(s.band_rows) * g.row_floats());
  }

  // [i0, i1) of planes * bands items; `bands` row bands per plane.
  template <typename F>
  void nchw_items(const F& f, int64_t i0, int64_t i1, int64_t bands, int64_t band_rows, size_t scratch,
                  const float* x, const float* w, const float* b, const float* r, float* y) const;
  template <typename F>
  void blocked_items(const F& f, int64_t i0, int64_t i1, int64_t bands, int64_t band_rows, const float* x,
                     const float* w, const float* b, const float* r, float* y) const;
};

template <typename F>
void DepthwiseConv::Impl::nchw_items(const F& f, int64_t i0, int64_t i1, int64_t bands, int64_t band_rows,
                                     size_t scratch, const float* x, const float* w, const float* b, const float* r,
                                     float* y) const {
  float* padded = conv_thread_scratch(scratch);
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t plane = i / bands, oh0 = i % bands * band_rows, oh1 = std::min(g.OH, oh0 + band_rows);
    if (oh0 >= oh1) continue;
    const int64_t n = plane / M, m = plane % M, ch = m / Mg;
    const int64_t pr0 = oh0 * g.stride_h;
    kernels->pad(g, x + (n * C + ch) * is, pr0, g.end_row(oh1), padded);
    float* yp = y + plane * os;
    const float* rp = r ? r + plane * os : nullptr;
    if (!kernels->rows(g, padded, pr0, w + m * ks, b ? b[m] : 0.0f, yp, oh0, oh1, act, rp))
      epilogue_row(f, yp + oh0 * g.OW, static_cast<const float*>(nullptr), (oh1 - oh0) * g.OW);
  }
}

template <typename F>
void DepthwiseConv::Impl::blocked_items(const F& f, int64_t i0, int64_t i1, int64_t bands, int64_t band_rows,
                                        const float* x, const float* w, const float* b, const float* r,
                                        float* y) const {
  constexpr int64_t B = dw::kBlock;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t plane = i / bands, oh0 = i % bands * band_rows, oh1 = std::min(g.OH, oh0 + band_rows);
    if (oh0 >= oh1) continue;
    const int64_t cb = plane % (M / B);  // plane: image n, channel block cb (X and Y have the same blocks)
    float* yp = y + plane * os * B;
    const float* rp = r ? r + plane * os * B : nullptr;
    if (!kernels->blocked_rows(g, x + plane * is * B, w + cb * ks * B, b ? b + cb * B : nullptr, yp, oh0, oh1, act,
                               rp))
      epilogue_row(f, yp + oh0 * g.OW * B, static_cast<const float*>(nullptr), (oh1 - oh0) * g.OW * B);
  }
}

DepthwiseConv::DepthwiseConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DepthwiseConv::~DepthwiseConv() = default;

bool DepthwiseConv::blocked() const { return impl_->blocked; }

std::unique_ptr<DepthwiseConv> DepthwiseConv::make(const ConvPlan& p, const FusedActivation& act, ConvLayouts layouts,
                                                   bool has_residual) {
  if (!depthwise_conv_applies(p)) return nullptr;
  const bool blocked = layouts.any();
  if (blocked && (p.g.rank() != 2 || p.Mg != 1 || p.C % dw::kBlock != 0))
    return nullptr;
  auto impl = std::make_unique<Impl>();
  Impl& c = *impl;
  c.N = p.N;
  c.C = p.C;
  c.M = p.M;
  c.Mg = p.Mg;
  c.is = p.is;
  c.os = p.os;
  c.ks = p.ks;
  c.act = act;
  c.layouts = layouts;
  c.blocked = blocked;
  dw::Geometry& g = c.g;
  const WindowGeometry& wg = p.g;
  // The axis the loops vectorize: the last spatial one, or in NCHW the rows of a convolution over
  // columns of width 1 (an [H, 1] plane is an [1, H] one in memory: FSMN's 20x1 filters over time).
  const bool columns = !blocked && wg.rank() == 2 && p.in[1] == 1 && wg.kernel[1] == 1 && wg.out[1] == 1;
  const int w_axis = columns ? 0 : wg.rank() - 1;
  if (wg.rank() == 2 && !columns) {
    g.H = p.in[0];
    g.OH = wg.out[0];
    g.KH = wg.kernel[0];
    g.stride_h = wg.strides[0];
    g.dil_h = wg.dilations[0];
    g.pad_t = wg.pads[0];
  }
  g.W = p.in[w_axis];
  g.OW = wg.out[w_axis];
  g.KW = wg.kernel[w_axis];
  g.stride_w = wg.strides[w_axis];
  g.dil_w = wg.dilations[w_axis];
  g.pad_l = wg.pads[w_axis];
  if (!blocked) {
    const int64_t padded = (g.OW - 1) * g.stride_w + (g.KW - 1) * g.dil_w + 1;
    g.phase_w = (padded + g.stride_w - 1) / g.stride_w;
    c.tap_offset.resize(static_cast<size_t>(g.KW));
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t col = kw * g.dil_w;
      c.tap_offset[static_cast<size_t>(kw)] = (col % g.stride_w) * g.phase_w + col / g.stride_w;
    }
    g.tap_offset = c.tap_offset.data();
  } else {
    c.w_blocked.resize(static_cast<size_t>(p.M * p.ks));
    if (!layouts.x) c.x_buf.resize(static_cast<size_t>(p.N * p.C * p.is));
    if (!layouts.y) c.y_buf.resize(static_cast<size_t>(p.out_shape.numel()));
    if (has_residual && !layouts.r) c.r_buf.resize(static_cast<size_t>(p.out_shape.numel()));
  }
  c.kernels = &active_kernels();
  return std::unique_ptr<DepthwiseConv>(new DepthwiseConv(std::move(impl)));
}

void DepthwiseConv::set_constant_weights(const float* w) {
  Impl& c = *impl_;
  if (!c.blocked) return;
  block_weights(w, c.M, c.ks, c.w_blocked.data());
  c.constant_w = true;
}

DepthwiseConv::Impl::Split DepthwiseConv::Impl::split(int threads) const {
  Split s;
  s.planes = blocked ? N * (M / dw::kBlock) : N * M;
  // Bands of output rows per plane: one unless there are fewer planes than a few per thread.
  const int64_t want = 4 * static_cast<int64_t>(threads);
  s.bands = s.planes >= want ? 1 : std::min(g.OH, (want + s.planes - 1) / s.planes);
  s.band_rows = (g.OH + s.bands - 1) / s.bands;
  return s;
}

void DepthwiseConv::reserve_thread_scratch() const {
  if (const size_t floats = impl_->scratch_floats(impl_->split(current_num_threads()))) conv_thread_scratch(floats);
}

void DepthwiseConv::run(const float* x, const float* w, const float* b, const float* r, float* y) {
  Impl& c = *impl_;
  const dw::Geometry& g = c.g;
  const Impl::Split s = c.split(current_num_threads());
  const int64_t planes = s.planes, bands = s.bands, band_rows = s.band_rows;
  const int64_t per_plane = c.blocked ? dw::kBlock : 1;  // channels an item computes
  // About 64K multiply-adds per chunk at least.
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, band_rows * g.OW * c.ks * per_plane));
  if (!c.blocked) {
    const size_t scratch = c.scratch_floats(s);
    c.act.visit([&](auto f) {
      parallel_for(planes * bands, grain, [&](int64_t i0, int64_t i1) {
        c.nchw_items(f, i0, i1, bands, band_rows, scratch, x, w, b, r, y);
      });
    });
    return;
  }
  // Blocked: whatever is NCHW is converted (a convolution between a blocked and an NCHW tensor).
  if (!c.constant_w) block_weights(w, c.M, c.ks, c.w_blocked.data());
  const float* xb = x;
  if (!c.layouts.x) {
    block_channels(x, c.x_buf.data(), c.N, c.C, c.is);
    xb = c.x_buf.data();
  }
  const float* rb = r;
  if (r && !c.layouts.r) {
    block_channels(r, c.r_buf.data(), c.N, c.M, c.os);
    rb = c.r_buf.data();
  }
  float* yb = c.layouts.y ? y : c.y_buf.data();
  c.act.visit([&](auto f) {
    parallel_for(planes * bands, grain, [&](int64_t i0, int64_t i1) {
      c.blocked_items(f, i0, i1, bands, band_rows, xb, c.w_blocked.data(), b, rb, yb);
    });
  });
  if (!c.layouts.y) unblock_channels(yb, y, c.N, c.M, c.os);
}

std::optional<Status> run_depthwise_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x,
                                         const Tensor& w, const Tensor* b, Tensor& y, const Tensor* r,
                                         ConvLayouts layouts) {
  if (!conv_operands_float32(x, w, b, r)) return std::nullopt;
  std::unique_ptr<DepthwiseConv> conv = DepthwiseConv::make(p, act, layouts, r != nullptr);
  if (!conv) return std::nullopt;
  conv->run(x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr, r ? r->data<float>() : nullptr,
            y.data<float>());
  return Status::ok();
}

std::unique_ptr<backend::BoundKernel> bind_depthwise_conv(const ConvPlan& p, const FusedActivation& act,
                                                          const backend::PrepareContext& ctx, ConvLayouts layouts) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = optional_input(ctx, 2);
  const Tensor* r = optional_input(ctx, 3);
  if (!conv_operands_float32(x, w, b, r)) return nullptr;
  std::unique_ptr<DepthwiseConv> conv = DepthwiseConv::make(p, act, layouts, r != nullptr);
  if (!conv) return nullptr;
  if (ctx.input_is_constant(1)) conv->set_constant_weights(w.data<float>());
  conv->reserve_thread_scratch();
  return backend::bind_call([conv = std::move(conv), px = x.data<float>(), pw = w.data<float>(),
                             pb = b ? b->data<float>() : nullptr, pr = r ? r->data<float>() : nullptr,
                             py = ctx.output(0).data<float>()] {
    conv->run(px, pw, pb, pr, py);
    return Status::ok();
  });
}

}  // namespace sdx::cpu
