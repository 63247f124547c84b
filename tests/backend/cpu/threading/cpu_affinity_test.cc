// move_off_cpu narrows a helper thread's affinity away from one CPU and never outside the given set.
#include "backend/cpu/threading/cpu_affinity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace sdx::cpu {
namespace {

TEST(CpuAffinity, AHelperMovesOffTheCallersCpuAndStaysInItsSet) {
  const std::vector<int> cpus = allowed_cpus();
  const int caller = current_cpu();
  if (cpus.empty() || caller < 0) GTEST_SKIP() << "thread affinity is not supported here";
  EXPECT_NE(std::find(cpus.begin(), cpus.end(), caller), cpus.end());
  std::vector<int> after;
  bool moved = false;
  std::thread helper([&] {
    moved = move_off_cpu(caller, cpus);
    after = allowed_cpus();
  });
  helper.join();
  if (cpus.size() == 1) {
    EXPECT_FALSE(moved);  // nowhere else to go
    EXPECT_EQ(after, cpus);
    return;
  }
  EXPECT_TRUE(moved);
  EXPECT_EQ(std::find(after.begin(), after.end(), caller), after.end());
  EXPECT_EQ(after.size(), cpus.size() - 1);
  for (int c : after) EXPECT_NE(std::find(cpus.begin(), cpus.end(), c), cpus.end());
  EXPECT_EQ(allowed_cpus(), cpus);  // the caller's own affinity is untouched
}

TEST(CpuAffinity, NoCpuMeansNoMove) { EXPECT_FALSE(move_off_cpu(-1, allowed_cpus())); }

}  // namespace
}  // namespace sdx::cpu
