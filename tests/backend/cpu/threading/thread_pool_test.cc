#include "backend/cpu/threading/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>

#include "../../../testing/pinned_thread.h"
#endif

namespace sdx::cpu {
namespace {

TEST(ThreadPool, WithoutPoolRunsInlineOnce) {
  ASSERT_EQ(current_thread_pool(), nullptr);
  int calls = 0;
  parallel_for(100, 1, [&](int64_t b, int64_t e) {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 100);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(current_num_threads(), 1);
}

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  ThreadPool pool(3);
  ScopedThreadPool scope(&pool);
  EXPECT_EQ(current_num_threads(), 3);
  for (int64_t n : {1, 2, 3, 7, 64, 1000, 4097}) {
    for (int64_t grain : {1, 5, 100}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(n, grain, [&](int64_t b, int64_t e) {
        ASSERT_LE(0, b);
        ASSERT_LT(b, e);
        ASSERT_LE(e, n);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " i " << i;
    }
  }
}

TEST(ThreadPool, ChunksRespectGrainAndUseWorkers) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  std::atomic<int> chunks{0};
  parallel_for(10, 6, [&](int64_t, int64_t) { chunks.fetch_add(1); });
  EXPECT_EQ(chunks.load(), 1);  // 10 items, grain 6: one chunk only
  chunks = 0;
  parallel_for(12, 6, [&](int64_t b, int64_t e) {
    EXPECT_EQ(e - b, 6);
    chunks.fetch_add(1);
  });
  EXPECT_EQ(chunks.load(), 2);
  // Over many calls, a worker (not only the caller) runs chunks.
  const auto caller = std::this_thread::get_id();
  std::atomic<int> by_worker{0};
  for (int i = 0; i < 2000 && by_worker.load() == 0; ++i)
    parallel_for(2, 1, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != caller)
        by_worker.fetch_add(1);
      else
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // leaves the second chunk to the worker
    });
  EXPECT_GT(by_worker.load(), 0);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  std::atomic<int64_t> sum{0};
  parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      parallel_for(100, 1, [&](int64_t b2, int64_t e2) {
        int64_t s = 0;
        for (int64_t j = b2; j < e2; ++j) s += j;
        sum.fetch_add(s);
      });
  });
  EXPECT_EQ(sum.load(), 8 * 4950);
}

// Several threads share one pool: one at a time gets it, the rest run inline; every result is right.
// Also run under ThreadSanitizer (scripts/test.sh runs *Concurren*).
TEST(ThreadPool, ConcurrentCallersShareOnePool) {
  ThreadPool pool(2);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      ScopedThreadPool scope(&pool);
      std::vector<int64_t> out(257);
      for (int round = 0; round < 300; ++round) {
        parallel_for(static_cast<int64_t>(out.size()), 8, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] = i * (t + round);
        });
        for (size_t i = 0; i < out.size(); ++i)
          if (out[i] != static_cast<int64_t>(i) * (t + round)) wrong.fetch_add(1);
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ThreadPool, DefaultThreadsIsPositive) { EXPECT_GE(ThreadPool::default_num_threads(), 1); }

TEST(ThreadPool, SleepingWorkersWakeUp) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // workers are past their spin by now
  std::vector<int> out(64, 0);
  parallel_for(64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] = 1;
  });
  EXPECT_EQ(std::accumulate(out.begin(), out.end(), 0), 64);
}

#if defined(__linux__)
// The scheduler can leave a worker on the caller's CPU (seen on KVM guests after the pool slept);
// the worker must move itself off, or it only takes time from the caller.
TEST(ThreadPool, WorkerLeavesTheCallersCpu) {
  ThreadPool pool(2);
  test::PinnedThread pin;  // the caller, on one CPU
  if (pin.cpus_before() < 2) GTEST_SKIP() << "needs at least 2 CPUs this thread may run on";
  ASSERT_TRUE(pin.ok());
  const int home = pin.cpu();
  ASSERT_TRUE(pool.place_workers_for_testing(home));  // the worker too

  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> worker_chunks{0}, worker_chunks_on_home{0};
  struct Ctx {
    std::thread::id caller;
    int home;
    std::atomic<int>* chunks;
    std::atomic<int>* on_home;
  } ctx{caller, home, &worker_chunks, &worker_chunks_on_home};
  auto job = [](void* p, int64_t, int64_t) {
    auto* c = static_cast<Ctx*>(p);
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (std::chrono::steady_clock::now() < until) {
    }
    if (std::this_thread::get_id() == c->caller) return;
    c->chunks->fetch_add(1, std::memory_order_relaxed);
    if (sched_getcpu() == c->home) c->on_home->fetch_add(1, std::memory_order_relaxed);
  };
  // The worker gets a time slice on `home` within milliseconds and then moves off it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.colocation_moves() == 0 && std::chrono::steady_clock::now() < deadline) pool.run(2, 1, job, &ctx);
  EXPECT_GE(pool.colocation_moves(), 1u);
  // Once moved, the worker shares the work from another CPU.
  worker_chunks = 0;
  worker_chunks_on_home = 0;
  for (int i = 0; i < 2000 && worker_chunks.load() < 20; ++i) pool.run(2, 1, job, &ctx);
  EXPECT_GE(worker_chunks.load(), 20);
  EXPECT_EQ(worker_chunks_on_home.load(), 0);
}
#endif

}  // namespace
}  // namespace sdx::cpu
