#include "backend/cpu/tensor/transpose_tile.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace sdx::cpu {
namespace {

// Every rows x cols up to 37 x 37 (whole 4 x 4 blocks, 16-row bands and every remainder), with
// source and destination strides wider than the matrix: the result is the naive transpose and the
// destination's padding is untouched.
TEST(TransposeTile32, EverySizeWithStridesMatchesTheNaiveTranspose) {
  constexpr uint32_t kUntouched = 0xdeadbeef;
  for (int64_t rows = 0; rows <= 37; ++rows) {
    for (int64_t cols = 0; cols <= 37; ++cols) {
      const int64_t lds = cols + 3, ldd = rows + 5;
      std::vector<uint32_t> src(static_cast<size_t>(rows * lds + 1));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i * 2654435761u);
      std::vector<uint32_t> dst(static_cast<size_t>(cols * ldd + 1), kUntouched);
      transpose_tile_32(src.data(), lds, dst.data(), ldd, rows, cols);
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = 0; r < ldd; ++r) {
          const uint32_t got = dst[static_cast<size_t>(c * ldd + r)];
          if (r < rows)
            ASSERT_EQ(got, src[static_cast<size_t>(r * lds + c)]) << rows << "x" << cols << " at " << r << "," << c;
          else
            ASSERT_EQ(got, kUntouched) << rows << "x" << cols << " wrote padding at " << r << "," << c;
        }
      }
    }
  }
}

// Floats move as bits: NaN payloads and signed zeros survive.
TEST(TransposeTile32, FloatsAreCopiedBitwise) {
  const std::vector<uint32_t> bits = {0x7fc00001u, 0xffc12345u, 0x80000000u, 0x00000001u,
                                      0x7f800000u, 0x3f800000u, 0xbf800000u, 0x00000000u};
  std::vector<float> src(8), dst(8);
  static_assert(sizeof(float) == sizeof(uint32_t));
  for (size_t i = 0; i < 8; ++i) __builtin_memcpy(&src[i], &bits[i], 4);
  transpose_tile_32(src.data(), 4, dst.data(), 2, 2, 4);  // [2][4] -> [4][2]
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      uint32_t got = 0;
      __builtin_memcpy(&got, &dst[static_cast<size_t>(c * 2 + r)], 4);
      EXPECT_EQ(got, bits[static_cast<size_t>(r * 4 + c)]);
    }
}

}  // namespace
}  // namespace sdx::cpu
