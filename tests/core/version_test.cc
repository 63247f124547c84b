// core/version.h: the version string and the build ID that caches of compiled results key on.
#include "core/version.h"

#include <gtest/gtest.h>

#include <string>

namespace sdx {
namespace {

TEST(Version, IsSet) { EXPECT_FALSE(std::string(version()).empty()); }

TEST(Version, BuildIdIsTheBinarysGnuBuildId) {
#if defined(__linux__)
  const std::string& id = build_id();
  // GCC and Clang on Linux link with --build-id by default (a 160-bit SHA-1: 40 hex digits).
  ASSERT_FALSE(id.empty()) << "no NT_GNU_BUILD_ID note in the binary holding sdx's code";
  EXPECT_GE(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(&build_id(), &id);  // computed once
#else
  GTEST_SKIP() << "build IDs are read from ELF notes on Linux only";
#endif
}

}  // namespace
}  // namespace sdx
