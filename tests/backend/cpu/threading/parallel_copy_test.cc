#include "backend/cpu/threading/parallel_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {
namespace {

// Sizes around the split threshold and the 4 KiB pieces, odd ones included.
void check_sizes() {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4095}, kParallelCopyMinBytes - 1, kParallelCopyMinBytes,
                       kParallelCopyMinBytes + 4097, size_t{1} << 20, (size_t{1} << 20) + 13}) {
    std::vector<uint8_t> src(bytes + 2), dst(bytes + 2, 0xEE);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
    parallel_copy(dst.data() + 1, src.data() + 1, bytes);  // unaligned on purpose
    EXPECT_EQ(dst[0], 0xEE) << bytes;
    EXPECT_EQ(dst[bytes + 1], 0xEE) << bytes << ": wrote past the end";
    for (size_t i = 1; i <= bytes; ++i) ASSERT_EQ(dst[i], src[i]) << "bytes " << bytes << " at " << i;
  }
}

TEST(ParallelCopy, CopiesEveryByteWithoutPool) { check_sizes(); }

TEST(ParallelCopy, CopiesEveryByteOnPools) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    ScopedThreadPool scope(&pool);
    check_sizes();
  }
}

}  // namespace
}  // namespace sdx::cpu
