// core/xxh3.h: the AVX2 path (where the CPU has it) gives the library's XXH3-64 for every length class
// xxHash distinguishes (0, 1-3, 4-8, 9-16, 17-128, 129-240, long inputs with and without a partial stripe
// and block) and for unaligned starts.
#include "core/xxh3.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>

namespace sdx {
namespace {

TEST(Xxh3, EqualsTheLibraryForEveryLengthAndAlignment) {
  std::string data(3 * 1024 * 1024 + 77, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  for (size_t n = 0; n <= 2048; ++n)
    for (size_t off : {size_t{0}, size_t{1}, size_t{7}}) ASSERT_EQ(xxh3_64(data.data() + off, n), XXH3_64bits(data.data() + off, n)) << n << " at " << off;
  for (size_t n : {size_t{1024 * 1024 - 1}, size_t{1024 * 1024}, size_t{1024 * 1024 + 13}, data.size() - 3})
    EXPECT_EQ(xxh3_64(data.data() + 3, n), XXH3_64bits(data.data() + 3, n)) << n;
  // A known value: XXH3-64 of the empty input (seed 0), as xxhsum -H3 prints it.
  EXPECT_EQ(xxh3_64("", 0), 0x2d06800538d394c2ULL);
  // One flipped bit anywhere changes the hash.
  const uint64_t whole = xxh3_64(data.data(), data.size());
  data[data.size() / 2] ^= 1;
  EXPECT_NE(xxh3_64(data.data(), data.size()), whole);
}

}  // namespace
}  // namespace sdx
