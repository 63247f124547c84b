#include "serve/memory_trimmer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "serve/metrics.h"

namespace sdx::serve {
namespace {

bool wait_until(const MemoryTrimmer& t, uint64_t trims) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (t.trims() < trims) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(MemoryTrimmer, TrimsOffTheCallersThreadAndTimesEachTrim) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "no malloc_trim without glibc";
#endif
  MetricsRegistry registry;
  Metric* seconds = registry.histogram("t_seconds", "trims", {1e-3, 1.0})->child({});
  MemoryTrimmer trimmer(seconds);
  EXPECT_EQ(trimmer.trims(), 0u);  // nothing asked, nothing done
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) {
    blocks.push_back(std::malloc(4 << 20));
    std::memset(blocks.back(), 1, 4 << 20);
  }
  for (void* b : blocks) std::free(b);
  trimmer.request();
  ASSERT_TRUE(wait_until(trimmer, 1));
  EXPECT_EQ(seconds->count(), trimmer.trims());
  // Requests during or after a trim lead to another one (none is lost); bursts coalesce.
  for (int i = 0; i < 100; ++i) trimmer.request();
  ASSERT_TRUE(wait_until(trimmer, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_LE(trimmer.trims(), 101u);
  EXPECT_EQ(seconds->count(), trimmer.trims());
}

TEST(MemoryTrimmer, DestructionWithARequestPendingStops) {
  MemoryTrimmer trimmer(nullptr);
  trimmer.request();
}  // joins without hanging

}  // namespace
}  // namespace sdx::serve
