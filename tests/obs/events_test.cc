#include "obs/events.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "obs/observers.h"

namespace sdx::obs {
namespace {

KernelEvent kernel(double us) {
  KernelEvent e;
  e.op = "MatMul";
  e.node = "mm \"1\"";
  e.time_us = us;
  return e;
}

TEST(EventBus, DeliversByKindAndDropsEventsUnderTheThreshold) {
  EventBus bus;
  std::vector<double> seen;
  int compiles = 0;
  EventCallbacks cb;
  cb.kernel = [&](const KernelEvent& e) { seen.push_back(e.time_us); };
  cb.compile = [&](const CompileEvent&) { ++compiles; };
  const int id = bus.subscribe(cb, /*min_duration_us=*/5.0);
  EXPECT_TRUE(bus.has_subscribers());
  bus.emit(kernel(1.0));
  bus.emit(kernel(7.5));
  bus.emit(MemoryEvent{});  // no memory callback: ignored
  bus.emit(CompileEvent{});
  EXPECT_EQ(seen, std::vector<double>{7.5});
  EXPECT_EQ(compiles, 1);
  EXPECT_TRUE(bus.unsubscribe(id));
  EXPECT_FALSE(bus.unsubscribe(id));
  bus.emit(kernel(9.0));
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_FALSE(bus.has_subscribers());
}

TEST(EventBus, UnsubscribingFromInsideACallbackIsSafe) {
  EventBus bus;
  int calls = 0, id = 0;
  EventCallbacks cb;
  cb.kernel = [&](const KernelEvent&) {
    ++calls;
    bus.unsubscribe(id);
  };
  id = bus.subscribe(cb);
  bus.emit(kernel(1));
  bus.emit(kernel(1));
  EXPECT_EQ(calls, 1);
}

TEST(EventBus, RecordsJsonLinesToAFile) {
  EventBus bus;
  const std::string path = ::testing::TempDir() + "/sdx_events.jsonl";
  auto id = bus.record_to_file(path);
  ASSERT_TRUE(id.is_ok()) << id.status().to_string();
  KernelEvent k = kernel(2.0);
  k.flops = 2e6;
  k.gflops = 1000;
  bus.emit(k);
  MemoryEvent m;
  m.what = "inputs";
  m.bytes = 4096;
  bus.emit(m);
  CompileEvent c;
  c.kernel = "abc";
  c.cache_hit = true;
  bus.emit(c);
  bus.unsubscribe(*id);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("\"type\":\"kernel\",\"op\":\"MatMul\",\"node\":\"mm \\\"1\\\"\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"gflops\":1000"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"direction\":\"host_to_host\",\"what\":\"inputs\",\"bytes\":4096"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\"cache_hit\":true"), std::string::npos) << lines[2];
  EXPECT_FALSE(bus.record_to_file("/nonexistent-dir/e.jsonl").is_ok());
}

TEST(EventBus, GlobalSubscriptionsTurnTheHotPathFlagOnAndOff) {
  EventBus& bus = EventBus::global();
  ASSERT_FALSE(bus.has_subscribers());
  EXPECT_EQ(observers() & kObserveEvents, 0u);
  const int id = bus.subscribe({});
  EXPECT_NE(observers() & kObserveEvents, 0u);
  bus.unsubscribe(id);
  EXPECT_EQ(observers() & kObserveEvents, 0u);
}

// Emitters on several threads while subscriptions come and go (run under ThreadSanitizer).
TEST(EventBus, ConcurrentEmittersAndSubscribers) {
  EventBus bus;
  std::atomic<uint64_t> delivered{0};
  std::atomic<bool> stop{false};
  EventCallbacks counting;
  counting.kernel = [&](const KernelEvent&) { delivered.fetch_add(1, std::memory_order_relaxed); };
  const int steady = bus.subscribe(counting);
  std::vector<std::thread> emitters;
  for (int t = 0; t < 3; ++t)
    emitters.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) bus.emit(kernel(1));
    });
  std::thread churn([&] {
    while (!stop.load(std::memory_order_acquire)) bus.unsubscribe(bus.subscribe(counting));
  });
  for (auto& t : emitters) t.join();
  stop.store(true, std::memory_order_release);
  churn.join();
  bus.unsubscribe(steady);
  EXPECT_GE(delivered.load(), 60000u);  // the steady subscriber saw every event
}

}  // namespace
}  // namespace sdx::obs
