#include "obs/op_timing_tracker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace sdx::obs {
namespace {

OpTiming timing(const char* op, uint32_t total_ns, uint64_t start = 0) {
  OpTiming t;
  t.op = intern_name(op);
  t.node = intern_name(std::string(op) + "_node");
  t.start_ns = start;
  t.phase_ns[static_cast<int>(TimingPhase::kKernelExec)] = total_ns;
  t.phase_ns[static_cast<int>(TimingPhase::kTotal)] = total_ns;
  return t;
}

const OpStats* find(const std::vector<OpStats>& s, const std::string& op) {
  for (const OpStats& x : s)
    if (x.op == op) return &x;
  return nullptr;
}

TEST(OpTimingTracker, ParsesModesAndInternsNames) {
  TimingMode m;
  ASSERT_TRUE(parse_timing_mode("Detailed", &m));
  EXPECT_EQ(m, TimingMode::kDetailed);
  ASSERT_TRUE(parse_timing_mode("0", &m));
  EXPECT_EQ(m, TimingMode::kDisabled);
  EXPECT_FALSE(parse_timing_mode("fast", &m));
  EXPECT_EQ(intern_name("MatMul"), intern_name(std::string("Mat") + "Mul"));
  EXPECT_STREQ(timing_phase_name(TimingPhase::kMemoryAlloc), "MEMORY_ALLOC");
}

TEST(OpTimingTracker, AggregatesCallsTotalsMinMaxStddev) {
  OpTimingTracker t;
  t.set_mode(TimingMode::kSimple);
  for (uint32_t ns : {1000u, 3000u}) t.record(timing("Relu", ns));
  t.record(timing("MatMul", 10'000));
  t.flush();
  auto stats = t.op_stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].op, "MatMul");  // largest total first
  const OpStats* relu = find(stats, "Relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->calls, 2u);
  EXPECT_DOUBLE_EQ(relu->total_ns, 4000);
  EXPECT_DOUBLE_EQ(relu->mean_ns, 2000);
  EXPECT_DOUBLE_EQ(relu->stddev_ns, 1000);
  EXPECT_DOUBLE_EQ(relu->min_ns, 1000);
  EXPECT_DOUBLE_EQ(relu->max_ns, 3000);
  EXPECT_DOUBLE_EQ(relu->phase_total_ns[static_cast<int>(TimingPhase::kKernelExec)], 4000);
  EXPECT_EQ(t.recorded(), 3u);
  t.flush();  // nothing new: nothing counted twice
  EXPECT_EQ(t.recorded(), 3u);
  t.reset();
  EXPECT_TRUE(t.op_stats().empty());
}

TEST(OpTimingTracker, CountsOverwrittenEntriesInsteadOfAggregatingThem) {
  OpTimingTracker t;
  t.set_mode(TimingMode::kSimple);
  const uint64_t n = OpTimingTracker::kRingEntries + 100;
  for (uint64_t i = 0; i < n; ++i) t.record(timing("Add", 100));
  t.flush();
  EXPECT_EQ(t.recorded(), OpTimingTracker::kRingEntries);
  EXPECT_EQ(t.overwritten(), 100u);
  ASSERT_EQ(t.thread_stats().size(), 1u);
  EXPECT_EQ(t.thread_stats()[0].overwritten, 100u);
}

TEST(OpTimingTracker, TraceModeKeepsEveryExecution) {
  OpTimingTracker t;
  t.set_mode(TimingMode::kTrace);
  for (uint64_t i = 0; i < 10; ++i) t.record(timing("Conv", 500, 1000 * i));
  t.flush();
  auto tr = t.trace();
  ASSERT_EQ(tr.size(), 10u);
  EXPECT_STREQ(tr[3].op, "Conv");
  EXPECT_STREQ(tr[3].node, "Conv_node");
  EXPECT_EQ(tr[3].start_ns, 3000u);
  t.set_mode(TimingMode::kSimple);  // simple: statistics only
  t.record(timing("Conv", 500));
  t.flush();
  EXPECT_EQ(t.trace().size(), 10u);
}

// Writers on several threads while another thread flushes: every execution is either aggregated or
// counted as overwritten, exactly once. Run under ThreadSanitizer by scripts/test.sh ("Concurren").
TEST(OpTimingTracker, ConcurrentWritersWithAFlusherLoseNothingSilently) {
  OpTimingTracker t;
  t.set_mode(TimingMode::kSimple);
  constexpr int kWriters = 4;
  constexpr uint64_t kPerWriter = 30000;
  std::atomic<bool> done{false};
  std::thread flusher([&] {
    while (!done.load(std::memory_order_acquire)) t.flush();
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      for (uint64_t i = 0; i < kPerWriter; ++i) t.record(timing(w % 2 ? "Odd" : "Even", 100 + static_cast<uint32_t>(w)));
    });
  for (auto& th : writers) th.join();
  done.store(true, std::memory_order_release);
  flusher.join();
  t.flush();
  EXPECT_EQ(t.recorded() + t.overwritten(), kWriters * kPerWriter);
  uint64_t calls = 0;
  for (const OpStats& s : t.op_stats()) {
    calls += s.calls;
    // Entries are never torn: each op's durations are the ones its writers wrote.
    EXPECT_GE(s.min_ns, 100);
    EXPECT_LE(s.max_ns, 103);
  }
  EXPECT_EQ(calls, t.recorded());
  uint64_t thread_calls = 0;
  for (const ThreadStats& s : t.thread_stats()) thread_calls += s.calls + s.overwritten;
  EXPECT_EQ(thread_calls, kWriters * kPerWriter);
}

TEST(OpTimingTracker, RingsOfEndedThreadsAreReused) {
  OpTimingTracker t;
  t.set_mode(TimingMode::kSimple);
  for (int i = 0; i < 3; ++i) std::thread([&] { t.record(timing("Neg", 10)); }).join();
  t.flush();
  EXPECT_EQ(t.recorded(), 3u);
  EXPECT_EQ(t.thread_stats().size(), 1u);
}

}  // namespace
}  // namespace sdx::obs
