#include "backend/cpu/jit/cache_manifest.h"

#include <gtest/gtest.h>

#include <string>

namespace sdx::jit {
namespace {

const std::string kSha(32, 'a');

TEST(CacheManifest, RoundTrip) {
  const CacheManifest m{"0123456789abcdef", 16384, kSha};
  EXPECT_EQ(m.to_text(), "sdx-jit-manifest 2\nkey 0123456789abcdef\nsize 16384\nxxh3_128 " + kSha + "\n");
  Result<CacheManifest> back = CacheManifest::parse(m.to_text());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back.value().key, m.key);
  EXPECT_EQ(back.value().size, m.size);
  EXPECT_EQ(back.value().digest, m.digest);
}

TEST(CacheManifest, AnythingElseIsDataLoss) {
  const std::string good = CacheManifest{"0123456789abcdef", 10, kSha}.to_text();
  for (const std::string& bad : {
           std::string(),
           good.substr(0, good.size() - 1),                                  // truncated (no final newline)
           good.substr(0, good.size() / 2),                                  // truncated
           "sdx-jit-manifest 3\nkey 0123456789abcdef\nsize 10\nxxh3_128 " + kSha + "\n",  // unknown format
           "sdx-jit-manifest 2\nkey 0123456789ABCDEF\nsize 10\nxxh3_128 " + kSha + "\n",  // not lowercase hex
           "sdx-jit-manifest 2\nkey 0123\nsize 10\nxxh3_128 " + kSha + "\n",
           "sdx-jit-manifest 2\nkey 0123456789abcdef\nsize -10\nxxh3_128 " + kSha + "\n",
           "sdx-jit-manifest 2\nkey 0123456789abcdef\nsize  10\nxxh3_128 " + kSha + "\n",
           "sdx-jit-manifest 2\nkey 0123456789abcdef\nsize 0\nxxh3_128 " + kSha + "\n",
           "sdx-jit-manifest 2\nkey 0123456789abcdef\nsize 10\nxxh3_128 " + kSha.substr(1) + "\n",
           "sdx-jit-manifest 2\nsize 10\nkey 0123456789abcdef\nxxh3_128 " + kSha + "\n",  // out of order
           good + "extra 1\n",
       }) {
    Result<CacheManifest> m = CacheManifest::parse(bad);
    ASSERT_FALSE(m.is_ok()) << bad;
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << bad;
  }
}

}  // namespace
}  // namespace sdx::jit
