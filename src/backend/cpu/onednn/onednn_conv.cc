// See onednn_conv.h.
#include "backend/cpu/onednn/onednn_conv.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/onednn/onednn.h"
#if SDX_WITH_ONEDNN
#include "backend/cpu/onednn/kept_packs.h"
#include "backend/cpu/onednn/onednn_util.h"
#endif
#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {

namespace {

// Read once (SDX_NO_WINOGRAD=1 turns Winograd off); tests flip it with set_winograd_enabled
// (relaxed: a plain switch, nothing is published through it).
std::atomic<bool>& winograd_flag() {
  static std::atomic<bool> flag{[] {
    const char* v = std::getenv("SDX_NO_WINOGRAD");
    return !(v && std::strcmp(v, "1") == 0);
  }()};
  return flag;
}

}  // namespace

bool winograd_enabled() { return winograd_flag().load(std::memory_order_relaxed); }
void set_winograd_enabled(bool enabled) { winograd_flag().store(enabled, std::memory_order_relaxed); }

#if SDX_WITH_ONEDNN

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

// 1-D convolutions with fewer multiply-adds stay on im2col + gemm (see make()).
constexpr int64_t kMin1dMacs = int64_t{1} << 20;

// Below this many multiply-adds a convolution runs as one slice: a slice costs a primitive call
// (a few microseconds) and a chunk hand-off.
constexpr int64_t kMinMacsPerSlice = int64_t{1} << 18;

// True for oneDNN's naive reference implementations ("ref:any"), which sdx's own kernels beat.
bool is_reference(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// The channel block of a blocked 4-D layout oneDNN chose (nChw16c: 16, nChw8c: 8), 0 otherwise.
int64_t channel_block(const memory::desc& md) {
  const memory::dims d = md.dims();
  for (auto [tag, b] : {std::pair{Tag::nChw16c, 16}, std::pair{Tag::nChw8c, 8}}) {
    if (md == memory::desc(d, kF32, tag)) return b;
  }
  return 0;
}

// One slice: output channels [o0, o0 + oc) of every row, or (by rows) every channel of output
// rows [h0, h0 + rows); its primitives, packed weights and (by rows) its own input, output and
// residual buffers. Its scratchpad is the executing thread's (thread_scratchpad).
struct ConvSlice {
  int64_t o0 = 0, oc = 0, h0 = 0;
  int64_t dst_elems = 0;  // by rows: floats in the output buffer (blocked padding included)
  dnnl::convolution_forward conv;
  dnnl::reorder pack;     // user weights slice -> packed
  dnnl::reorder block;    // by rows: the rows of X it reads -> src
  dnnl::reorder unblock;  // the convolution's output -> Y (when it is not Y itself)
  dnnl::reorder load_r;   // the residual -> r_buf in the layout the epilogue runs on (when it differs)
  memory w_user, w_packed, bias, x_user, src, dst, y_user, r_user, r_buf, scratch;
  size_t scratch_bytes = 0;
  AlignedBuffer w_buf, src_buf, dst_buf, r_own;
  std::shared_ptr<const AlignedBuffer> w_shared;  // the packed W when shared (pack_kept_weights)
};

// The largest scratchpad a convolution made so far needs (relaxed: each thread reads it when it
// runs a slice, after parallel_for has published everything make() wrote, and only sizes its own
// buffer with it).
std::atomic<size_t> g_scratch_high_water{0};

void note_scratchpad(size_t bytes) {
  size_t seen = g_scratch_high_water.load(std::memory_order_relaxed);
  while (seen < bytes && !g_scratch_high_water.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}

// The calling thread's scratchpad for convolution slices: at least `bytes`, grown to the high-water
// mark at once, so that a thread allocates only on its first call after a larger convolution was
// made, never in steady state. One buffer per thread, shared by every convolution (a thread runs
// one slice at a time), instead of one per slice: Winograd's are megabytes each (ResNet-18: 83 MB
// for its 26 Winograd slices at 2 threads). Null when the allocation fails.
void* thread_scratchpad(size_t bytes) {
  thread_local AlignedBuffer buf;
  thread_local size_t size = 0;
  if (bytes == 0) return nullptr;
  const size_t want = std::max(bytes, g_scratch_high_water.load(std::memory_order_relaxed));
  if (size < want) {
    buf = AlignedBuffer(want);
    size = buf.ok_for(want) ? want : 0;
  }
  return size >= bytes ? buf.data() : nullptr;
}

// One channel range of the input reorder (X's layout -> the convolution's).
struct SrcPiece {
  int64_t c0 = 0;  // its first channel (a channel piece; 0 for a row piece, whose memories are views)
  dnnl::reorder reorder;
  memory from, to;
};

// Where sdx's epilogue (the residual add and the activations oneDNN does not apply) runs on a
// channel slice: on the convolution's output before its reorder to Y, or on Y after it.
enum class EpilogueAt { kNone, kDst, kY };

}  // namespace

struct OneDnnConv::Impl {
  int64_t N = 0, C = 0, M = 0, is = 0, os = 0, w_per_out = 0;
  // src_direct: the convolution reads X itself (X already in its layout); dst_direct: it writes Y
  // itself; r_direct: the residual is read in place (in the layout of the buffer the epilogue runs on).
  bool src_direct = true, dst_direct = true, r_direct = true, act_in_dnnl = true, by_rows = false;
  bool winograd = false;
  EpilogueAt epilogue_at = EpilogueAt::kNone;
  FusedActivation act;
  std::vector<ConvSlice> slices;
  std::vector<SrcPiece> pieces;
  AlignedBuffer src_buf, dst_buf, r_buf;
};

OneDnnConv::OneDnnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnConv::~OneDnnConv() = default;

int OneDnnConv::num_slices() const { return static_cast<int>(impl_->slices.size()); }
bool OneDnnConv::winograd() const { return impl_->winograd; }

std::unique_ptr<OneDnnConv> OneDnnConv::make(const ConvPlan& p, const FusedActivation& act, bool has_bias,
                                             bool has_residual, ConvLayouts layouts) {
  // A convolution over columns of width 1 (k x 1 kernels on H x 1 planes: filters over time) has the
  // bytes of one over rows (1 x k on 1 x H) in every layout, and oneDNN's direct kernels block the
  // output along W: as rows, magika's 5x1 layer (256 -> 512 channels, 512 x 1) takes 4.5 ms, not 8.5.
  // A 1-D convolution is a 2-D one over 1 x W planes (the same bytes): the STFT and the audio and
  // text encoders' 1-D convolutions get oneDNN's kernels instead of im2col + gemm. Small ones stay on
  // im2col + gemm, bound or not (the same rule both ways, so replay gives run()'s bits): in
  // control-flow bodies, which run slot by slot, a primitive made and packed on every call would
  // cost more than they do.
  if (p.g.rank() == 1) {
    if (p.N * p.M * p.os * p.Cg * p.ks < kMin1dMacs) return nullptr;
    ConvPlan plane = p;
    plane.in = {1, p.in[0]};
    plane.g.kernel = {1, p.g.kernel[0]};
    plane.g.strides = {1, p.g.strides[0]};
    plane.g.dilations = {1, p.g.dilations[0]};
    plane.g.pads = {0, p.g.pads[0], 0, p.g.pads[1]};
    plane.g.out = {1, p.g.out[0]};
    return make(plane, act, has_bias, has_residual, layouts);
  }
  if (p.g.rank() == 2 && p.in[0] > 1 && p.in[1] == 1 && p.g.kernel[1] == 1 && p.g.out[1] == 1) {
    ConvPlan rows = p;
    std::swap(rows.in[0], rows.in[1]);
    for (std::vector<int64_t>* v : {&rows.g.kernel, &rows.g.strides, &rows.g.dilations, &rows.g.out})
      std::swap((*v)[0], (*v)[1]);
    std::swap(rows.g.pads[0], rows.g.pads[1]);
    std::swap(rows.g.pads[2], rows.g.pads[3]);
    return make(rows, act, has_bias, has_residual, layouts);
  }
  // Winograd where oneDNN takes the whole case, else the direct kernels.
  std::unique_ptr<OneDnnConv> conv;
  if (winograd_enabled()) conv = make_with(p, act, has_bias, has_residual, layouts, true);
  return conv ? std::move(conv) : make_with(p, act, has_bias, has_residual, layouts, false);
}

std::unique_ptr<OneDnnConv> OneDnnConv::make_with(const ConvPlan& p, const FusedActivation& act, bool has_bias,
                                                  bool has_residual, ConvLayouts layouts, bool allow_winograd) {
  if (!onednn_enabled() || p.g.rank() != 2 || p.out_shape.numel() == 0) return nullptr;
  if ((layouts.x && p.C % kChannelBlock != 0) || ((layouts.y || layouts.r) && p.M % kChannelBlock != 0) ||
      (layouts.r && !has_residual))
    return nullptr;
  OneDnnSingleThread one;
  try {
    auto impl = std::make_unique<Impl>();
    Impl& c = *impl;
    c.N = p.N;
    c.C = p.C;
    c.M = p.M;
    c.is = p.is;
    c.os = p.os;
    c.w_per_out = p.Cg * p.ks;
    c.act = act;
    const WindowGeometry& g = p.g;
    const memory::dims src_dims = {1, p.C, p.in[0], p.in[1]};
    const memory::dims strides = {g.strides[0], g.strides[1]};
    const memory::dims dilates = {g.dilations[0] - 1, g.dilations[1] - 1};  // oneDNN counts from 0
    const memory::dims pad_l = {g.pads[0], g.pads[1]}, pad_r = {g.pads[2], g.pads[3]};
    auto out_dims = [&](int64_t oc) { return memory::dims{1, oc, g.out[0], g.out[1]}; };
    auto w_dims = [&](int64_t oc) {
      return p.G == 1 ? memory::dims{oc, p.C, g.kernel[0], g.kernel[1]}
                      : memory::dims{p.G, oc / p.G, p.Cg, g.kernel[0], g.kernel[1]};
    };
    const Tag w_tag = p.G == 1 ? Tag::oihw : Tag::goihw;
    // The layouts sdx hands over: X, Y and R each NCHW or channel-blocked (channel_blocked.h).
    const Tag x_tag = layouts.x ? Tag::nChw16c : Tag::nchw, y_tag = layouts.y ? Tag::nChw16c : Tag::nchw,
              r_tag = layouts.r ? Tag::nChw16c : Tag::nchw;

    // Winograd (oneDNN's F(2x2, 3x3) / F(4x4, 3x3) kernels on nChw16c) for 3x3, stride 1, undilated,
    // ungrouped convolutions of 16-channel multiples, sliced by output channels: 1.5-3x faster than
    // the direct kernels here (bench/README.md "Convolution"). Its activation always runs in sdx's
    // epilogue: an eltwise post-op changes the kernel oneDNN picks, so FusedConv would no longer
    // equal Conv + activation bit for bit.
    const bool winograd_shape = allow_winograd && p.G == 1 && g.kernel[0] == 3 && g.kernel[1] == 3 &&
                                g.strides[0] == 1 && g.strides[1] == 1 && g.dilations[0] == 1 &&
                                g.dilations[1] == 1 && p.C % kChannelBlock == 0 && p.M % kChannelBlock == 0;
    // Slices: one per pool thread. Output channels, whole channel blocks each, when there is at
    // least one block per slice: X is reordered once (in channel pieces) unless it is in the
    // convolution's layout already, and each slice reads all of it with its share of the weights.
    // Otherwise (fewer channel blocks than threads: the early layers) output rows: each slice reorders
    // the input rows its windows read, convolves them with all the weights and writes its rows back,
    // with no barrier in between. Rows balance better (3 blocks on 2 threads: 2/3 of the work on one),
    // but their copies in and out cost about as much as a 1x1 convolution, and they take 3x3
    // convolutions off Winograd: on yolox_ddddocr_det's 24- to 48-channel layers at 2 threads, rows made
    // a 48 -> 48 3x3 convolution at 52 x 52 1.09x faster than 1 thread, channels 1.5x (see the commit). Grouped and small convolutions run as one slice. With a
    // channel-blocked X, Y or R the slices are cut at multiples of 16 channels, so that each is a
    // contiguous run of whole blocks of those too.
    const int64_t macs = p.M * p.os * c.w_per_out;
    const int64_t threads = p.G == 1 ? current_num_threads() : 1;
    const int64_t k_max = std::max<int64_t>(1, std::min(threads, macs / kMinMacsPerSlice));
    auto rows_for = [&](int64_t block) {
      const int64_t blocks = (p.M + block - 1) / block;
      return k_max > 1 && blocks < k_max && g.out[0] >= 4 * k_max;
    };

    dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    auto conv_pd = [&](const memory::desc& src, int64_t oc, const memory::desc& dst,
                       const memory::dims& pl = {}, const memory::dims& pr = {}) {
      const memory::desc w(w_dims(oc), kF32, Tag::any);
      const memory::desc b = has_bias ? memory::desc({oc}, kF32, Tag::a) : memory::desc();
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, w, b, dst, strides, dilates,
                                        pl.empty() ? pad_l : pl, pr.empty() ? pad_r : pr);
      return dnnl::convolution_forward::primitive_desc(d, attr, onednn_engine());
    };

    const memory::desc src_plain(src_dims, kF32, Tag::nchw);
    memory::desc src_md = src_plain;
    int64_t dst_block = 0;
    if (winograd_shape && !rows_for(kChannelBlock)) {
      alg = dnnl::algorithm::convolution_winograd;
      try {
        const memory::desc blocked(src_dims, kF32, Tag::nChw16c);
        auto probe = conv_pd(blocked, p.M, memory::desc(out_dims(p.M), kF32, Tag::nChw16c));
        if (!is_reference(probe)) {
          src_md = blocked;
          dst_block = 16;
        }
      } catch (const dnnl::error&) {
      }
      if (dst_block == 0) alg = dnnl::algorithm::convolution_direct;
    }
    const bool winograd = alg == dnnl::algorithm::convolution_winograd;
    c.winograd = winograd;
    // With a residual the activation comes after it, so both run in sdx's epilogue (onednn_conv.h);
    // so does every activation under Winograd.
    dnnl::post_ops ops;
    c.act_in_dnnl = act.is_none() || (!winograd && !has_residual && append_exact_post_op(act, ops));
    const bool epilogue = has_residual || !c.act_in_dnnl;
    attr.set_post_ops(ops);

    // Direct convolutions: activations channel-blocked (nChw16c on AVX-512, nChw8c on AVX2: oneDNN's
    // direct jit kernels; left to itself, format_tag::any, oneDNN 2.6 picks NHWC brgemm kernels, as
    // fast here but not sliceable into contiguous runs of output channels). The input layout is
    // oneDNN's choice for that output (NCHW for a handful of input channels, else blocked). Without
    // a jit kernel for these layouts, both stay NCHW (oneDNN's gemm-based convolution); where
    // oneDNN has nothing but its "ref" kernels (slower than sdx's im2col + gemm by orders of
    // magnitude) it declines.
    for (auto [tag, b] : {std::pair{Tag::nChw16c, int64_t{16}}, std::pair{Tag::nChw8c, int64_t{8}}}) {
      if (winograd) break;
      try {
        auto probe = conv_pd(memory::desc(src_dims, kF32, Tag::any), p.M, memory::desc(out_dims(p.M), kF32, tag));
        const memory::desc src = probe.src_desc();
        if (is_reference(probe) || !(src == src_plain || channel_block(src) == b)) continue;
        src_md = src;
        dst_block = b;
        break;
      } catch (const dnnl::error&) {
      }
    }
    const bool src_blocked = !(src_md == src_plain), dst_blocked = dst_block > 0;
    const Tag dst_tag = dst_block == 16 ? Tag::nChw16c : dst_block == 8 ? Tag::nChw8c : Tag::nchw;
    const memory::desc x_md(src_dims, kF32, x_tag), y_md(out_dims(p.M), kF32, y_tag), r_md(out_dims(p.M), kF32, r_tag);

    const int64_t block = layouts.any() ? kChannelBlock : dst_blocked ? dst_block : 8;
    const int64_t blocks = (p.M + block - 1) / block;
    c.by_rows = !winograd && rows_for(block);
    const int64_t k = c.by_rows ? k_max : std::min(k_max, blocks);
    const Tag blk_tag = dst_block == 16 ? Tag::nChw16c : Tag::nChw8c;

    if (c.by_rows) {
      // Every slice has its own compact buffers; sdx's epilogue runs on its output buffer, with the
      // residual rows reordered next to it in the same layout, before the output goes to Y.
      c.src_direct = c.dst_direct = c.r_direct = false;
      const int64_t H = p.in[0], W = p.in[1], OW = g.out[1], s0 = g.strides[0], win = g.window(0);
      for (int64_t j = 0; j < k; ++j) {
        ConvSlice s;
        s.oc = p.M;
        s.h0 = g.out[0] * j / k;
        const int64_t h1 = g.out[0] * (j + 1) / k;
        // Input rows [r0, r1) the windows of output rows [h0, h1) read; the rest is padding.
        const int64_t start = s.h0 * s0 - g.pads[0], end = (h1 - 1) * s0 - g.pads[0] + win;
        const int64_t r0 = std::max<int64_t>(0, start), r1 = std::min(H, end);
        if (r1 <= r0) return nullptr;
        const memory::dims in_d = {1, p.C, r1 - r0, W}, out_d = {1, p.M, h1 - s.h0, OW};
        const memory::desc src_md_j(in_d, kF32, src_blocked ? blk_tag : Tag::nchw);
        const memory::desc dst_md_j(out_d, kF32, dst_blocked ? blk_tag : Tag::nchw);
        auto pd = conv_pd(src_md_j, p.M, dst_md_j, {r0 - start, g.pads[1]}, {end - r1, g.pads[3]});
        if (is_reference(pd) || !(pd.src_desc() == src_md_j) || !(pd.dst_desc() == dst_md_j)) return nullptr;
        s.conv = dnnl::convolution_forward(pd);
        s.scratch_bytes = pd.scratchpad_desc().get_size();
        s.src_buf = AlignedBuffer(src_md_j.get_size());
        s.dst_buf = AlignedBuffer(dst_md_j.get_size());
        s.dst_elems = static_cast<int64_t>(dst_md_j.get_size() / sizeof(float));
        if (has_residual) s.r_own = AlignedBuffer(dst_md_j.get_size());
        if (!s.src_buf.ok_for(1) || !s.dst_buf.ok_for(1) || (has_residual && !s.r_own.ok_for(1)))
          return nullptr;
        s.w_user = memory(memory::desc(w_dims(p.M), kF32, w_tag), onednn_engine(), DNNL_MEMORY_NONE);
        s.w_packed = memory(pd.weights_desc(), onednn_engine(), DNNL_MEMORY_NONE);  // set by pack_weights
        s.pack = dnnl::reorder(s.w_user, s.w_packed);
        if (has_bias) s.bias = memory(pd.bias_desc(), onednn_engine(), DNNL_MEMORY_NONE);
        // The slice's rows of X, Y and R: strided views of the whole images (handle = image start).
        s.x_user = memory(x_md.submemory_desc(in_d, {0, 0, r0, 0}), onednn_engine(), DNNL_MEMORY_NONE);
        s.src = memory(src_md_j, onednn_engine(), s.src_buf.data());
        s.block = dnnl::reorder(s.x_user, s.src);
        s.dst = memory(dst_md_j, onednn_engine(), s.dst_buf.data());
        s.y_user = memory(y_md.submemory_desc(out_d, {0, 0, s.h0, 0}), onednn_engine(), DNNL_MEMORY_NONE);
        s.unblock = dnnl::reorder(s.dst, s.y_user);
        if (has_residual) {
          s.r_user = memory(r_md.submemory_desc(out_d, {0, 0, s.h0, 0}), onednn_engine(), DNNL_MEMORY_NONE);
          s.r_buf = memory(dst_md_j, onednn_engine(), s.r_own.data());
          s.load_r = dnnl::reorder(s.r_user, s.r_buf);
        }
        s.scratch = memory(pd.scratchpad_desc(), onednn_engine(), DNNL_MEMORY_NONE);
        note_scratchpad(s.scratch_bytes);
        c.slices.push_back(std::move(s));
      }
      return std::unique_ptr<OneDnnConv>(new OneDnnConv(std::move(impl)));
    }

    // By channels. X is read in place when it is in the convolution's layout, else reordered into
    // src_buf; the convolution writes Y in place when Y is in its layout, else into dst_buf.
    c.src_direct = src_md == x_md;
    c.dst_direct = dst_tag == y_tag;
    if (!c.src_direct) c.src_buf = AlignedBuffer(src_md.get_size());
    const int64_t m_padded = dst_blocked ? (p.M + dst_block - 1) / dst_block * dst_block : p.M;
    if (!c.dst_direct) c.dst_buf = AlignedBuffer(static_cast<size_t>(m_padded * p.os) * sizeof(float));
    if ((!c.src_direct && !c.src_buf.ok_for(1)) || (!c.dst_direct && !c.dst_buf.ok_for(1))) return nullptr;
    // The epilogue runs where the residual can be read in place: on the convolution's output when
    // R has its layout and Y does not (before the reorder to Y), else on Y, with R reordered into
    // r_buf in Y's layout when their layouts differ.
    if (epilogue) {
      c.epilogue_at = has_residual && !c.dst_direct && dst_tag == r_tag ? EpilogueAt::kDst : EpilogueAt::kY;
      c.r_direct = !has_residual || c.epilogue_at == EpilogueAt::kDst || r_tag == y_tag;
      if (!c.r_direct) {
        c.r_buf = AlignedBuffer(static_cast<size_t>(p.M * p.os) * sizeof(float));
        if (!c.r_buf.ok_for(1)) return nullptr;
      }
    }

    for (int64_t j = 0; j < k; ++j) {
      ConvSlice s;
      s.o0 = blocks * j / k * block;
      s.oc = std::min(p.M, blocks * (j + 1) / k * block) - s.o0;
      const memory::desc dst_md = memory::desc(out_dims(s.oc), kF32, dst_tag);
      auto pd = conv_pd(src_md, s.oc, dst_md);
      if (is_reference(pd) || !(pd.src_desc() == src_md) || !(pd.dst_desc() == dst_md)) return nullptr;
      s.conv = dnnl::convolution_forward(pd);
      s.scratch_bytes = pd.scratchpad_desc().get_size();
      s.w_user = memory(memory::desc(w_dims(s.oc), kF32, w_tag), onednn_engine(), DNNL_MEMORY_NONE);
      s.w_packed = memory(pd.weights_desc(), onednn_engine(), DNNL_MEMORY_NONE);  // set by pack_weights
      s.pack = dnnl::reorder(s.w_user, s.w_packed);
      if (has_bias) s.bias = memory(pd.bias_desc(), onednn_engine(), DNNL_MEMORY_NONE);
      s.src = c.src_direct ? memory(src_md, onednn_engine(), DNNL_MEMORY_NONE)
                           : memory(src_md, onednn_engine(), c.src_buf.data());
      if (c.dst_direct) {
        s.dst = memory(dst_md, onednn_engine(), DNNL_MEMORY_NONE);
      } else {
        // For one image a run of whole channel blocks is contiguous in the blocked buffer.
        s.dst = memory(dst_md, onednn_engine(), static_cast<float*>(c.dst_buf.data()) + s.o0 * p.os);
        s.y_user = memory(memory::desc(out_dims(s.oc), kF32, y_tag), onednn_engine(), DNNL_MEMORY_NONE);
        s.unblock = dnnl::reorder(s.dst, s.y_user);
      }
      if (!c.r_direct) {
        s.r_user = memory(memory::desc(out_dims(s.oc), kF32, r_tag), onednn_engine(), DNNL_MEMORY_NONE);
        s.r_buf = memory(memory::desc(out_dims(s.oc), kF32, y_tag), onednn_engine(),
                         static_cast<float*>(c.r_buf.data()) + s.o0 * p.os);
        s.load_r = dnnl::reorder(s.r_user, s.r_buf);
      }
      s.scratch = memory(pd.scratchpad_desc(), onednn_engine(), DNNL_MEMORY_NONE);
      note_scratchpad(s.scratch_bytes);
      c.slices.push_back(std::move(s));
    }

    // The input reorder, cut by channel blocks (of both layouts) into as many pieces as slices
    // when the blocks allow.
    if (!c.src_direct) {
      const int64_t sb = std::max<int64_t>({channel_block(src_md), layouts.x ? kChannelBlock : 0, 1});
      const int64_t cblocks = p.C % sb == 0 ? p.C / sb : 0;
      const int64_t src_block = channel_block(src_md);
      const Tag src_tag = src_block == 16 ? Tag::nChw16c : src_block == 8 ? Tag::nChw8c : Tag::nchw;
      // Channels that are not whole blocks (24 into nChw16c): cut by input rows instead, as views of
      // both images (a 24-channel 208 x 208 input took a whole thread's reorder: 2.4 ms on 1 thread
      // against 1.5 ms on 2 for its convolution). The blocked buffer's padded channels are zeroed
      // once here; the row reorders write only real channels.
      if (cblocks == 0 && k > 1 && p.in[0] >= k) {
        std::memset(c.src_buf.data(), 0, src_md.get_size());
        for (int64_t j = 0; j < k; ++j) {
          const int64_t h0 = p.in[0] * j / k, h1 = p.in[0] * (j + 1) / k;
          const memory::dims d = {1, p.C, h1 - h0, p.in[1]}, at = {0, 0, h0, 0};
          SrcPiece piece;
          piece.from = memory(x_md.submemory_desc(d, at), onednn_engine(), DNNL_MEMORY_NONE);
          piece.to = memory(src_md.submemory_desc(d, at), onednn_engine(), c.src_buf.data());
          piece.reorder = dnnl::reorder(piece.from, piece.to);
          c.pieces.push_back(std::move(piece));
        }
        return std::unique_ptr<OneDnnConv>(new OneDnnConv(std::move(impl)));
      }
      const int64_t pieces = cblocks > 0 ? std::min(k, cblocks) : 1;
      for (int64_t j = 0; j < pieces; ++j) {
        SrcPiece piece;
        if (pieces == 1) {
          piece.from = memory(x_md, onednn_engine(), DNNL_MEMORY_NONE);
          piece.to = memory(src_md, onednn_engine(), c.src_buf.data());
        } else {
          piece.c0 = cblocks * j / pieces * sb;
          const int64_t cn = cblocks * (j + 1) / pieces * sb - piece.c0;
          const memory::dims d = {1, cn, p.in[0], p.in[1]};
          piece.from = memory(memory::desc(d, kF32, x_tag), onednn_engine(), DNNL_MEMORY_NONE);
          piece.to = memory(memory::desc(d, kF32, src_tag), onednn_engine(),
                            static_cast<float*>(c.src_buf.data()) + piece.c0 * p.is);
        }
        piece.reorder = dnnl::reorder(piece.from, piece.to);
        c.pieces.push_back(std::move(piece));
      }
    }
    return std::unique_ptr<OneDnnConv>(new OneDnnConv(std::move(impl)));
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

Status OneDnnConv::pack_weights(const float* w, const backend::PackedWeightsRef& packed) const {
  Impl& c = *impl_;
  for (ConvSlice& s : c.slices) s.w_user.set_data_handle(const_cast<float*>(w) + s.o0 * c.w_per_out);
  // Set by any failing chunk; read after parallel_for returns, which makes the chunks' writes visible.
  std::atomic<bool> ok{true};
  parallel_for(static_cast<int64_t>(c.slices.size()), 1, [&](int64_t b, int64_t e) {
    OneDnnSingleThread one;
    for (int64_t j = b; j < e; ++j) {
      ConvSlice& s = c.slices[static_cast<size_t>(j)];
      const std::string key =
          packed.store ? packed_weights_key(packed.prefix, "conv", j, s.w_packed.get_desc()) : std::string();
      if (!pack_or_adopt(packed.store, key, s.w_packed, s.w_buf, [&] {
            return execute(s.pack, {{DNNL_ARG_FROM, s.w_user.get()}, {DNNL_ARG_TO, s.w_packed.get()}});
          }))
        ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load(std::memory_order_relaxed) ? Status::ok() : internal_error("oneDNN weight reorder failed");
}

Status OneDnnConv::pack_kept_weights(const float* w, const backend::PackedWeightsRef& packed) const {
  Impl& c = *impl_;
  // Set by any failing chunk; read after parallel_for returns, which makes the chunks' writes visible.
  std::atomic<bool> ok{true};
  parallel_for(static_cast<int64_t>(c.slices.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      ConvSlice& s = c.slices[static_cast<size_t>(j)];
      const std::string key =
          packed.store ? packed_weights_key(packed.prefix, "conv", j, s.w_packed.get_desc()) : std::string();
      // One packing per slice of W (its first output channel and, in the layout, its size).
      if (!adopt_or_kept_pack(packed.store, key, w, s.o0, s.w_packed, s.w_shared, [&] {
            OneDnnSingleThread one;
            s.w_user.set_data_handle(const_cast<float*>(w) + s.o0 * c.w_per_out);
            return execute(s.pack, {{DNNL_ARG_FROM, s.w_user.get()}, {DNNL_ARG_TO, s.w_packed.get()}});
          }))
        ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load(std::memory_order_relaxed) ? Status::ok() : internal_error("oneDNN weight reorder failed");
}

Status OneDnnConv::run(const float* x, const float* bias, float* y, const float* residual) const {
  Impl& c = *impl_;
  // Set by any failing chunk; read after the parallel_fors return (see pack_weights).
  std::atomic<bool> ok{true};
  auto check = [&](bool executed) {
    if (!executed) ok.store(false, std::memory_order_relaxed);
  };
  auto reorder = [&](const dnnl::reorder& r, const memory& from, const memory& to) {
    check(execute(r, {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}}));
  };
  // Runs on the thread that executes the slice, with that thread's scratchpad.
  auto convolve = [&](ConvSlice& s) {
    void* scratch = thread_scratchpad(s.scratch_bytes);
    if (s.scratch_bytes > 0 && !scratch) return check(false);
    s.scratch.set_data_handle(scratch);
    if (bias) {
      check(execute(s.conv, {{DNNL_ARG_SRC, s.src.get()},
                             {DNNL_ARG_WEIGHTS, s.w_packed.get()},
                             {DNNL_ARG_BIAS, s.bias.get()},
                             {DNNL_ARG_DST, s.dst.get()},
                             {DNNL_ARG_SCRATCHPAD, s.scratch.get()}}));
    } else {
      check(execute(s.conv, {{DNNL_ARG_SRC, s.src.get()},
                             {DNNL_ARG_WEIGHTS, s.w_packed.get()},
                             {DNNL_ARG_DST, s.dst.get()},
                             {DNNL_ARG_SCRATCHPAD, s.scratch.get()}}));
    }
  };
  // sdx's epilogue on count elements: act(v + r), or act(v) without a residual.
  auto epilogue = [&](float* v, const float* r, int64_t count) {
    c.act.visit([&](auto f) { epilogue_row(f, v, r, count); });
  };
  const bool sdx_epilogue = !c.act_in_dnnl || residual;
  for (int64_t n = 0; n < c.N; ++n) {
    float* xn = const_cast<float*>(x) + n * c.C * c.is;
    float* yn = y + n * c.M * c.os;
    float* rn = residual ? const_cast<float*>(residual) + n * c.M * c.os : nullptr;
    if (c.by_rows) {
      // Handles before the chunks start, as below.
      for (ConvSlice& s : c.slices) {
        s.x_user.set_data_handle(xn);
        s.y_user.set_data_handle(yn);
        if (rn) s.r_user.set_data_handle(rn);
        if (bias) s.bias.set_data_handle(const_cast<float*>(bias));
      }
      parallel_for(static_cast<int64_t>(c.slices.size()), 1, [&](int64_t b, int64_t e) {
        OneDnnSingleThread one;
        for (int64_t j = b; j < e; ++j) {
          ConvSlice& s = c.slices[static_cast<size_t>(j)];
          reorder(s.block, s.x_user, s.src);
          convolve(s);
          if (sdx_epilogue) {
            // On the slice's whole output buffer (blocked padding included: the reorder to Y skips it).
            if (rn) reorder(s.load_r, s.r_user, s.r_buf);
            epilogue(static_cast<float*>(s.dst_buf.data()), rn ? static_cast<const float*>(s.r_own.data()) : nullptr,
                     s.dst_elems);
          }
          reorder(s.unblock, s.dst, s.y_user);
        }
      });
      continue;
    }
    // Handles are set here, on the calling thread, before the chunks that read them start
    // (parallel_for publishes everything written before it to the workers).
    for (SrcPiece& piece : c.pieces) piece.from.set_data_handle(xn + piece.c0 * c.is);
    for (ConvSlice& s : c.slices) {
      if (c.src_direct) s.src.set_data_handle(xn);
      if (bias) s.bias.set_data_handle(const_cast<float*>(bias) + s.o0);
      (c.dst_direct ? s.dst : s.y_user).set_data_handle(yn + s.o0 * c.os);
      if (rn && !c.r_direct) s.r_user.set_data_handle(rn + s.o0 * c.os);
    }
    if (!c.src_direct) {
      parallel_for(static_cast<int64_t>(c.pieces.size()), 1, [&](int64_t b, int64_t e) {
        OneDnnSingleThread one;
        for (int64_t j = b; j < e; ++j) {
          SrcPiece& piece = c.pieces[static_cast<size_t>(j)];
          reorder(piece.reorder, piece.from, piece.to);
        }
      });
    }
    parallel_for(static_cast<int64_t>(c.slices.size()), 1, [&](int64_t b, int64_t e) {
      OneDnnSingleThread one;
      for (int64_t j = b; j < e; ++j) {
        ConvSlice& s = c.slices[static_cast<size_t>(j)];
        convolve(s);
        // The residual of the slice's channels, in the layout of the buffer the epilogue runs on.
        const float* rs = nullptr;
        if (rn && c.r_direct) {
          rs = rn + s.o0 * c.os;
        } else if (rn) {
          reorder(s.load_r, s.r_user, s.r_buf);
          rs = static_cast<const float*>(s.r_buf.get_data_handle());
        }
        if (sdx_epilogue && c.epilogue_at == EpilogueAt::kDst)
          epilogue(static_cast<float*>(s.dst.get_data_handle()), rs, s.oc * c.os);
        if (!c.dst_direct) reorder(s.unblock, s.dst, s.y_user);
        if (sdx_epilogue && c.epilogue_at == EpilogueAt::kY) epilogue(yn + s.o0 * c.os, rs, s.oc * c.os);
      }
    });
  }
  return ok.load(std::memory_order_relaxed) ? Status::ok() : internal_error("oneDNN convolution failed");
}

#else  // !SDX_WITH_ONEDNN

struct OneDnnConv::Impl {};
OneDnnConv::OneDnnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnConv::~OneDnnConv() = default;
std::unique_ptr<OneDnnConv> OneDnnConv::make(const ConvPlan&, const FusedActivation&, bool, bool, ConvLayouts) {
  return nullptr;
}
std::unique_ptr<OneDnnConv> OneDnnConv::make_with(const ConvPlan&, const FusedActivation&, bool, bool, ConvLayouts,
                                                  bool) {
  return nullptr;
}
Status OneDnnConv::pack_weights(const float*, const backend::PackedWeightsRef&) const {
  return unimplemented("built without oneDNN");
}
Status OneDnnConv::pack_kept_weights(const float*, const backend::PackedWeightsRef&) const {
  return unimplemented("built without oneDNN");
}
Status OneDnnConv::run(const float*, const float*, float*, const float*) const {
  return unimplemented("built without oneDNN");
}
int OneDnnConv::num_slices() const { return 0; }
bool OneDnnConv::winograd() const { return false; }

#endif

std::optional<Status> run_onednn_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x,
                                      const Tensor& w, bool w_kept, const Tensor* b, Tensor& y, const Tensor* r,
                                      ConvLayouts layouts) {
  if (!conv_operands_float32(x, w, b, r)) return std::nullopt;
  std::unique_ptr<OneDnnConv> conv = OneDnnConv::make(p, act, b != nullptr, r != nullptr, layouts);
  if (!conv) return std::nullopt;
  SDX_RETURN_IF_ERROR(w_kept ? conv->pack_kept_weights(w.data<float>()) : conv->pack_weights(w.data<float>()), "");
  return conv->run(x.data<float>(), b ? b->data<float>() : nullptr, y.data<float>(), r ? r->data<float>() : nullptr);
}

std::unique_ptr<backend::BoundKernel> bind_onednn_conv(const ConvPlan& p, const FusedActivation& act,
                                                       const backend::PrepareContext& ctx, bool w_kept,
                                                       ConvLayouts layouts) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = optional_input(ctx, 2);
  const Tensor* r = optional_input(ctx, 3);
  const bool has_b = b != nullptr;
  if (!conv_operands_float32(x, w, b, r)) return nullptr;
  std::unique_ptr<OneDnnConv> conv = OneDnnConv::make(p, act, has_b, r != nullptr, layouts);
  if (!conv) return nullptr;
  // Weights from an initializer are packed once, now; others before every call.
  const bool packed = ctx.input_is_constant(1);
  const backend::PackedWeightsRef store{ctx.packed_weights(), ctx.packed_key_prefix()};
  if (packed && !(w_kept ? conv->pack_kept_weights(w.data<float>(), store) : conv->pack_weights(w.data<float>(), store))
                     .is_ok())
    return nullptr;
  return backend::bind_call([conv = std::move(conv), packed, px = x.data<float>(), pw = w.data<float>(),
                             pb = b ? b->data<float>() : nullptr, py = ctx.output(0).data<float>(),
                             pr = r ? r->data<float>() : nullptr] {
    if (!packed) SDX_RETURN_IF_ERROR(conv->pack_weights(pw), "");
    return conv->run(px, pb, py, pr);
  });
}

}  // namespace sdx::cpu
