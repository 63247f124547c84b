#include "backend/cpu/tensor/channel_blocked.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

// Element (n, c, p) of an NCHW tensor at its NCHW16c place, naively.
int64_t blocked_index(int64_t n, int64_t c, int64_t p, int64_t C, int64_t hw) {
  return ((n * C / kChannelBlock + c / kChannelBlock) * hw + p) * kChannelBlock + c % kChannelBlock;
}

void check_round_trip(int64_t N, int64_t C, int64_t hw) {
  const size_t count = static_cast<size_t>(N * C * hw);
  std::vector<float> nchw(count), blocked(count, -1.0f), back(count, -1.0f);
  for (size_t i = 0; i < count; ++i) nchw[i] = static_cast<float>(i) * 0.25f - 7.0f;
  block_channels(nchw.data(), blocked.data(), N, C, hw);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < hw; ++p)
        ASSERT_EQ(blocked[static_cast<size_t>(blocked_index(n, c, p, C, hw))],
                  nchw[static_cast<size_t>((n * C + c) * hw + p)])
            << "N" << N << " C" << C << " hw" << hw << " at " << n << "," << c << "," << p;
  unblock_channels(blocked.data(), back.data(), N, C, hw);
  ASSERT_EQ(back, nchw) << "N" << N << " C" << C << " hw" << hw;
}

// Position counts below, at and across the 1024-position work items and the 4-position register
// blocks, over one and several images and channel blocks.
TEST(ChannelBlocked, BlockAndUnblockMatchTheLayoutAtOddSizes) {
  for (int64_t hw : {1, 3, 4, 7, 49, 1023, 1024, 1025, 3 * 1024 + 5}) {
    check_round_trip(1, 16, hw);
    check_round_trip(2, 48, hw);
  }
}

TEST(ChannelBlocked, SplitOverThreadsIsTheSameCopy) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  check_round_trip(1, 32, 160 * 160 + 3);
  check_round_trip(3, 16, 2049);
}

}  // namespace
}  // namespace sdx::cpu
