// See channel_blocked.h.
#include "backend/cpu/tensor/channel_blocked.h"

#include <algorithm>

#include "backend/cpu/tensor/transpose_tile.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

// Positions per work item: 16 x 1024 floats (64 KiB) each way.
constexpr int64_t kPositionsPerItem = 1024;

// f(block, p0, p1) over every channel block of the n images and ranges of its hw positions.
template <typename F>
void for_each_block_range(int64_t n, int64_t c, int64_t hw, const F& f) {
  const int64_t blocks = n * c / kChannelBlock;
  const int64_t ranges = (hw + kPositionsPerItem - 1) / kPositionsPerItem;
  parallel_for(blocks * ranges, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t p0 = i % ranges * kPositionsPerItem;
      f(i / ranges, p0, std::min(hw, p0 + kPositionsPerItem));
    }
  });
}

}  // namespace

void block_channels(const float* src, float* dst, int64_t n, int64_t c, int64_t hw) {
  for_each_block_range(n, c, hw, [&](int64_t b, int64_t p0, int64_t p1) {
    const int64_t base = b * kChannelBlock * hw;
    // [16][p1 - p0] rows of stride hw -> [p1 - p0][16]
    transpose_tile_32(src + base + p0, hw, dst + base + p0 * kChannelBlock, kChannelBlock, kChannelBlock, p1 - p0);
  });
}

void unblock_channels(const float* src, float* dst, int64_t n, int64_t c, int64_t hw) {
  for_each_block_range(n, c, hw, [&](int64_t b, int64_t p0, int64_t p1) {
    const int64_t base = b * kChannelBlock * hw;
    transpose_tile_32(src + base + p0 * kChannelBlock, kChannelBlock, dst + base + p0, hw, p1 - p0, kChannelBlock);
  });
}

}  // namespace sdx::cpu
