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

// copy_rows for every row width it copies with a fixed size (1, 2, 4, 8, 16 bytes) and others around
// them, unaligned, rows interleaved into a wider destination (a Concat's output rows), enough rows to
// split over a pool: each run lands at its stride and nothing between runs is written.
TEST(ParallelCopy, CopyRowsOfEveryWidth) {
  ThreadPool pool(2);
  for (bool pooled : {false, true}) {
    ScopedThreadPool scope(pooled ? &pool : nullptr);
    for (size_t width : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{8}, size_t{12}, size_t{16}, size_t{17}}) {
      for (size_t rows : {size_t{1}, size_t{7}, size_t{70000}}) {
        const size_t src_stride = width + 3, dst_stride = 2 * width + 5;
        std::vector<uint8_t> src(rows * src_stride + 1), dst(rows * dst_stride + 1, 0xEE);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
        copy_rows(dst.data() + 1, dst_stride, src.data() + 1, src_stride, width, rows);
        for (size_t r = 0; r < rows; ++r)
          for (size_t b = 0; b < dst_stride; ++b) {
            const uint8_t want = b < width ? src[1 + r * src_stride + b] : 0xEE;
            ASSERT_EQ(dst[1 + r * dst_stride + b], want) << "width " << width << " rows " << rows << " row " << r << " byte " << b;
          }
        ASSERT_EQ(dst[0], 0xEE);
      }
    }
  }
}

}  // namespace
}  // namespace sdx::cpu
