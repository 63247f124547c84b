// See onednn_pool.h.
#include "backend/cpu/onednn/onednn_pool.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>

#include "backend/cpu/tensor/channel_blocked.h"
#include "backend/cpu/onednn/onednn.h"
#include "backend/cpu/threading/thread_pool.h"
#if SDX_WITH_ONEDNN
#include "backend/cpu/onednn/onednn_util.h"
#endif

namespace sdx::cpu {

#if SDX_WITH_ONEDNN

namespace {

using dnnl::memory;
constexpr memory::data_type kF32 = memory::data_type::f32;
// Below this many window reads a pooling runs as one slice.
constexpr int64_t kMinReadsPerSlice = int64_t{1} << 16;

struct PoolSlice {
  int64_t p0 = 0;  // first plane
  dnnl::pooling_v2_forward pool;
  memory src, dst, scratch;
  AlignedBuffer scratch_buf;
};

}  // namespace

struct OneDnnPool::Impl {
  int64_t is = 0, os = 0;
  std::vector<PoolSlice> slices;
};

OneDnnPool::OneDnnPool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnPool::~OneDnnPool() = default;

std::unique_ptr<OneDnnPool> OneDnnPool::make(Kind kind, const WindowGeometry& g, const std::vector<int64_t>& in,
                                             int64_t planes, bool count_include_pad, bool blocked) {
  if (!onednn_enabled() || g.rank() != 2 || in.size() != 2 || planes <= 0) return nullptr;
  if (blocked && planes % kChannelBlock != 0) return nullptr;
  memory::dims kernel(2), strides(2), dilation(2), pad_l(2), pad_r(2);
  for (int d = 0; d < 2; ++d) {
    const int64_t w = g.window(d);
    if (g.out[d] <= 0 || g.pads[d] >= w) return nullptr;
    // The end padding oneDNN needs for the resolved output size (ceil_mode may add some).
    int64_t r = std::max<int64_t>(0, (g.out[d] - 1) * g.strides[d] + w - in[d] - g.pads[d]);
    if ((in[d] + g.pads[d] + r - w) / g.strides[d] + 1 != g.out[d] || r >= w) return nullptr;
    if (kind == Kind::kAverage && count_include_pad && r > g.pads[d + 2]) return nullptr;
    kernel[d] = g.kernel[d];
    strides[d] = g.strides[d];
    dilation[d] = g.dilations[d] - 1;  // oneDNN counts from 0
    pad_l[d] = g.pads[d];
    pad_r[d] = r;
  }
  const dnnl::algorithm alg = kind == Kind::kMax ? dnnl::algorithm::pooling_max
                              : count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  OneDnnSingleThread one;
  try {
    auto impl = std::make_unique<Impl>();
    impl->is = in[0] * in[1];
    impl->os = g.out[0] * g.out[1];
    const int64_t reads = planes * impl->os * g.kernel[0] * g.kernel[1];
    // Slices of whole channel blocks when blocked (a run of them is contiguous, like NCHW planes).
    const int64_t unit = blocked ? kChannelBlock : 1, units = planes / unit;
    const int64_t k = std::max<int64_t>(1, std::min<int64_t>({current_num_threads(), units, reads / kMinReadsPerSlice}));
    const memory::format_tag tag = blocked ? memory::format_tag::nChw16c : memory::format_tag::nchw;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    for (int64_t j = 0; j < k; ++j) {
      PoolSlice s;
      s.p0 = units * j / k * unit;
      const int64_t cp = units * (j + 1) / k * unit - s.p0;
      const memory::desc src({1, cp, in[0], in[1]}, kF32, tag);
      const memory::desc dst({1, cp, g.out[0], g.out[1]}, kF32, tag);
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, strides, kernel, dilation,
                                       pad_l, pad_r);
      dnnl::pooling_v2_forward::primitive_desc pd(d, attr, onednn_engine());
      // oneDNN's naive "ref" kernels are no faster than sdx's own.
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return nullptr;
      s.pool = dnnl::pooling_v2_forward(pd);
      s.src = memory(src, onednn_engine(), DNNL_MEMORY_NONE);
      s.dst = memory(dst, onednn_engine(), DNNL_MEMORY_NONE);
      s.scratch_buf = AlignedBuffer(pd.scratchpad_desc().get_size());
      if (!s.scratch_buf.ok_for(pd.scratchpad_desc().get_size())) return nullptr;
      s.scratch = memory(pd.scratchpad_desc(), onednn_engine(), s.scratch_buf.data());
      impl->slices.push_back(std::move(s));
    }
    return std::unique_ptr<OneDnnPool>(new OneDnnPool(std::move(impl)));
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

Status OneDnnPool::run(const float* x, float* y) const {
  Impl& c = *impl_;
  // Set by any failing chunk; read after parallel_for returns, which makes the chunks' writes visible.
  std::atomic<bool> ok{true};
  // Handles are set before the chunks start (parallel_for publishes them to the workers).
  for (PoolSlice& s : c.slices) {
    s.src.set_data_handle(const_cast<float*>(x) + s.p0 * c.is);
    s.dst.set_data_handle(y + s.p0 * c.os);
  }
  parallel_for(static_cast<int64_t>(c.slices.size()), 1, [&](int64_t b, int64_t e) {
    OneDnnSingleThread one;
    for (int64_t j = b; j < e; ++j) {
      PoolSlice& s = c.slices[static_cast<size_t>(j)];
      if (!execute(s.pool, {{DNNL_ARG_SRC, s.src.get()}, {DNNL_ARG_DST, s.dst.get()}, {DNNL_ARG_SCRATCHPAD, s.scratch.get()}}))
        ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load(std::memory_order_relaxed) ? Status::ok() : internal_error("oneDNN pooling failed");
}

#else  // !SDX_WITH_ONEDNN

struct OneDnnPool::Impl {};
OneDnnPool::OneDnnPool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnPool::~OneDnnPool() = default;
std::unique_ptr<OneDnnPool> OneDnnPool::make(Kind, const WindowGeometry&, const std::vector<int64_t>&, int64_t, bool,
                                             bool) {
  return nullptr;
}
Status OneDnnPool::run(const float*, float*) const { return unimplemented("built without oneDNN"); }

#endif

}  // namespace sdx::cpu
