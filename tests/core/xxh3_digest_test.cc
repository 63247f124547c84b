#include "core/xxh3_digest.h"

#include <gtest/gtest.h>

#include <string>

namespace sdx {
namespace {

// Known XXH3-128 values in canonical (big-endian) hex, as xxhsum -H2 prints them: the empty input and "abc".
TEST(Xxh3Digest, KnownDigests) {
  EXPECT_EQ(Xxh3Digest::hex_digest(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(Xxh3Digest::hex_digest("abc"), "06b05ab6733a618578af5f94892f3950");
}

TEST(Xxh3Digest, IncrementalEqualsOneShot) {
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + 7);
  Xxh3Digest h;
  for (size_t off = 0; off < data.size(); off += 4093) h.update(data.data() + off, std::min<size_t>(4093, data.size() - off));
  EXPECT_EQ(h.finish(), Xxh3Digest::hex_digest(data));
  EXPECT_NE(Xxh3Digest::hex_digest(data), Xxh3Digest::hex_digest(data.substr(1)));
}

}  // namespace
}  // namespace sdx
