// 2-D float32 MaxPool (without Indices) and AveragePool on oneDNN, for kernels/nn_pool.cc; other
// ranks, types and attribute combinations stay on the reference pooling there.
//
//   WindowGeometry g = ...;  g.resolve(in, auto_pad, ceil_mode);
//   auto pool = OneDnnPool::make(OneDnnPool::Kind::kMax, g, in, planes, count_include_pad);  // null: reference
//   pool->run(x, y);   // NCHW in, NCHW out (make(..., /*blocked=*/true): NCHW16c in and out)
//
// Pooling never mixes channels, so the N * C planes are viewed as the channels of one image and cut
// into one slice of planes per pool thread, each with its own single-threaded primitive (see
// onednn.h) over plain NCHW memory (the planes of a slice are contiguous). The slicing does not
// change any output element's arithmetic. Channel-blocked tensors (channel_blocked.h, the
// sdx.BlockedMaxPool / BlockedAveragePool of ConvLayoutOptimizations) are the same N * C channels
// in nChw16c, cut at multiples of 16 planes.
//
// Geometry: oneDNN wants out = (in + pad_begin + pad_end - window) / stride + 1, so ceil_mode and
// floor-rounded pads become the end padding that gives the resolved output size. AveragePool with
// count_include_pad and a ceil_mode window reaching past the declared pads is declined (oneDNN would
// count the extra padding; ONNX does not), as are windows that could lie wholly in padding.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/kernels/util/conv_util.h"
#include "core/status.h"

namespace sdx::cpu {

class OneDnnPool {
 public:
  enum class Kind { kMax, kAverage };

  // g: resolved (out and effective pads set); in: input spatial sizes; planes: N * C (a multiple of
  // 16 when blocked); blocked: X and Y channel-blocked.
  static std::unique_ptr<OneDnnPool> make(Kind kind, const WindowGeometry& g, const std::vector<int64_t>& in,
                                          int64_t planes, bool count_include_pad, bool blocked = false);
  ~OneDnnPool();
  OneDnnPool(const OneDnnPool&) = delete;
  OneDnnPool& operator=(const OneDnnPool&) = delete;

  // Fails only if a oneDNN primitive does.
  Status run(const float* x, float* y) const;

 private:
  struct Impl;
  explicit OneDnnPool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdx::cpu
