// The environment every test in sdx_tests runs in, set before any test starts (and before gtest_main):
// the disk plan cache is off unless the caller set SDX_DISK_PLAN_CACHE (a hit from an earlier run would
// change what sessions' first calls do), so running the binary directly is as hermetic as under ctest.
// Tests of the cache turn it on with SessionOptions of their own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

const bool kCacheOff = [] { return setenv("SDX_DISK_PLAN_CACHE", "0", /*overwrite=*/0) == 0; }();

TEST(SuiteEnvironment, TheDiskPlanCacheIsOffUnlessTheCallerSaidOtherwise) {
  ASSERT_TRUE(kCacheOff);
  ASSERT_NE(std::getenv("SDX_DISK_PLAN_CACHE"), nullptr);
}

}  // namespace
