#include "core/sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace sdx {
namespace {

TEST(Sha256, KnownDigests) {
  // FIPS 180-2 examples.
  EXPECT_EQ(Sha256::hex_digest("").value(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hex_digest("abc").value(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string data(100000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  Sha256 h;
  for (size_t i = 0; i < data.size(); i += 4093) h.update(data.data() + i, std::min<size_t>(4093, data.size() - i));
  EXPECT_EQ(h.finish().value(), Sha256::hex_digest(data).value());
  EXPECT_FALSE(h.finish().is_ok());  // spent
}

}  // namespace
}  // namespace sdx
