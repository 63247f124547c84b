// Channel-blocked activations: the NCHW16c layout (oneDNN's nChw16c) in which ConvLayoutOptimizations
// lets sdx.FusedConv nodes hand tensors to each other, so oneDNN's blocked convolutions skip the
// reorder to and from NCHW around every convolution (src/opt/passes/conv_layout_optimizations.cc).
//
//   ConvLayouts lay{.x = true, .y = true};        // X and Y channel-blocked, R (residual) NCHW
//   block_channels(nchw, blocked, n, c, h * w);    // NCHW -> NCHW16c (c % 16 == 0)
//   unblock_channels(blocked, nchw, n, c, h * w);  // and back
//
// A blocked tensor keeps its logical shape [N, C, H, W] in the graph (C a multiple of 16, so the byte
// size is the same) and stores element (n, c, h, w) at ((n * C/16 + c/16) * H * W + h * W + w) * 16
// + c % 16. Only float32 4-D tensors are ever blocked.
#pragma once

#include <cstdint>

namespace sdx::cpu {

inline constexpr int64_t kChannelBlock = 16;

// Which of a convolution's X, Y and residual R are channel-blocked (false: NCHW).
struct ConvLayouts {
  bool x = false, y = false, r = false;
  bool any() const { return x || y || r; }
};

// NCHW -> NCHW16c over n images of c channels (a multiple of 16) of hw positions: 16 x hw
// transposes in SSE2 blocks (transpose_tile.h), split over the calling thread's pool by blocks and
// ranges of positions (a bitwise copy: the result does not depend on the split).
void block_channels(const float* src, float* dst, int64_t n, int64_t c, int64_t hw);

// NCHW16c -> NCHW, the inverse of block_channels.
void unblock_channels(const float* src, float* dst, int64_t n, int64_t c, int64_t hw);

}  // namespace sdx::cpu
