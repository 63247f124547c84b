// The model cache's policy (src/serve/model_cache.h): value = decayed frequency x load cost / bytes, the
// eviction order it gives, models in use kept, a model that cannot fit refused with a clear status, and
// its metrics. Handles are plain shared_ptrs here and time is a clock the test moves; the repository and
// the store over a real cache are in model_repository_test.cc and model_store_test.cc.
// ModelCacheConcurrency runs under TSAN in CI.
#include "serve/model_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace sdx::serve {
namespace {

using Clock = ModelCache::Clock;

// A clock the test moves by hand.
struct FakeClock {
  Clock::time_point t = Clock::time_point() + std::chrono::hours(1);
  void advance(double seconds) { t += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)); }
};

ModelCache::Options options(int64_t budget, FakeClock* clock, double half_life = 60.0) {
  ModelCache::Options o;
  o.budget_bytes = budget;
  o.half_life_seconds = half_life;
  o.clock = [clock] { return clock->t; };
  return o;
}

ModelCache::Handle model() { return std::make_shared<int>(0); }

// Admits `key` (bytes, load seconds) as a start-up load; fails the test when refused.
void put(ModelCache& cache, const std::string& key, int64_t bytes, double seconds = 0.01) {
  Result<ModelCache::Handle> r =
      cache.admit(key, "model '" + key + "'", key, {model(), bytes, seconds}, ModelCache::Admit::kInitial, nullptr);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
}

void use(ModelCache& cache, const std::string& key, int times) {
  for (int i = 0; i < times; ++i) ASSERT_NE(cache.acquire(key), nullptr) << key;
}

std::vector<std::string> resident(const ModelCache& cache) {
  std::vector<std::string> keys = cache.resident_keys();
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(ModelCache, ValueIsFrequencyTimesLoadCostOverBytes) {
  FakeClock clock;
  ModelCache cache(options(0, &clock));
  put(cache, "a", 8192, 0.5);
  EXPECT_EQ(cache.value("a"), 0.0);  // loaded at start, never used: F = 0
  use(cache, "a", 3);
  EXPECT_DOUBLE_EQ(cache.value("a"), 3 * 0.5 / 8192);
  // Bytes and load cost have floors: a model without weights, loaded instantly, has a finite value.
  put(cache, "tiny", 0, 0.0);
  use(cache, "tiny", 1);
  EXPECT_DOUBLE_EQ(cache.value("tiny"), 1 * 1e-6 / 4096);
  // Ordering: more uses, costlier loads and fewer bytes each raise the value.
  put(cache, "cheap", 8192, 0.05);
  put(cache, "big", 81920, 0.5);
  use(cache, "cheap", 3);
  use(cache, "big", 3);
  EXPECT_GT(cache.value("a"), cache.value("cheap"));
  EXPECT_GT(cache.value("a"), cache.value("big"));
  use(cache, "big", 30);
  EXPECT_NEAR(cache.value("big") / cache.value("a"), 1.1, 1e-12);  // 11x the uses, 10x the bytes
  EXPECT_EQ(cache.value("unknown"), 0.0);
}

TEST(ModelCache, FrequencyDecaysWithItsHalfLife) {
  FakeClock clock;
  ModelCache cache(options(0, &clock, /*half_life=*/10.0));
  put(cache, "old", 4096, 1.0);
  put(cache, "new", 4096, 1.0);
  use(cache, "old", 8);
  clock.advance(30);  // three half-lives: 8 -> 1
  EXPECT_NEAR(cache.value("old"), 1.0 / 4096, 1e-12);
  use(cache, "new", 2);
  EXPECT_GT(cache.value("new"), cache.value("old"));  // 2 recent uses beat 8 old ones
  use(cache, "old", 1);                                // decayed 1, plus 1 now
  EXPECT_NEAR(cache.value("old"), 2.0 / 4096, 1e-12);
  clock.advance(10);
  EXPECT_NEAR(cache.value("old"), 1.0 / 4096, 1e-12);
  EXPECT_NEAR(cache.value("new"), 1.0 / 4096, 1e-12);
}

TEST(ModelCache, EvictsTheLowestValueFirstUntilItFits) {
  FakeClock clock;
  ModelCache cache(options(300, &clock));
  put(cache, "hot", 100);
  put(cache, "warm", 100);
  put(cache, "cold", 100);
  EXPECT_EQ(cache.held_bytes(), 300);
  use(cache, "hot", 10);
  use(cache, "warm", 2);
  put(cache, "d", 100);  // evicts cold (never used)
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"d", "hot", "warm"}));
  EXPECT_EQ(cache.counts("cold").evictions, 1);
  use(cache, "d", 1);
  put(cache, "e", 200);  // needs two: d (1 use), then warm (2 uses)
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"e", "hot"}));
  EXPECT_EQ(cache.counts("hot").evictions, 0);
  EXPECT_EQ(cache.held_bytes(), 300);
  EXPECT_EQ(cache.acquire("warm"), nullptr);  // evicted: the owner reloads it
}

TEST(ModelCache, TiesGoToTheLeastRecentlyUsed) {
  FakeClock clock;
  ModelCache cache(options(200, &clock, /*half_life=*/1e9));
  put(cache, "a", 100);
  put(cache, "b", 100);
  use(cache, "b", 1);
  clock.advance(1);
  use(cache, "a", 1);  // same frequency and cost, a used later
  put(cache, "c", 100);
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"a", "c"}));
}

TEST(ModelCache, ModelsInUseAreNotEvicted) {
  FakeClock clock;
  ModelCache cache(options(200, &clock));
  put(cache, "busy", 100);
  put(cache, "idle", 100);
  use(cache, "idle", 5);
  ModelCache::Handle running = cache.acquire("busy");  // a request running on it: lower value, kept
  put(cache, "new", 100);
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"busy", "new"}));
  EXPECT_EQ(cache.counts("idle").evictions, 1);
  // Every other model in use: nothing can go, so the load is refused and nothing is evicted.
  ModelCache::Handle running2 = cache.acquire("new");
  Result<ModelCache::Handle> r =
      cache.admit("x", "model 'x'", "x", {model(), 100, 0.01}, ModelCache::Admit::kInitial, nullptr);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("model 'x' needs 100 bytes"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("requests hold 200"), std::string::npos) << r.status().message();
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"busy", "new"}));
  running.reset();  // the request ended: busy can go now
  ASSERT_TRUE(cache.admit("x", "model 'x'", "x", {model(), 100, 0.01}, ModelCache::Admit::kInitial, nullptr).is_ok());
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"new", "x"}));
}

TEST(ModelCache, AModelBiggerThanTheBudgetIsRefusedAndEvictsNothing) {
  FakeClock clock;
  ModelCache cache(options(1000, &clock));
  put(cache, "a", 600);
  std::vector<ModelCache::Handle> released;
  Result<ModelCache::Handle> r =
      cache.admit("huge", "model 'huge'", "huge", {model(), 1001, 0.01}, ModelCache::Admit::kInitial, &released);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(),
            "model 'huge' needs 1001 bytes: more than the whole memory budget of 1000 bytes (--memory-budget)");
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"a"}));
  EXPECT_EQ(cache.counts("huge").refusals, 1);
  EXPECT_EQ(released.size(), 1u);  // the refused model, for the caller to drop after it unlocks
}

TEST(ModelCache, OnDemandLoadsAreMissesReplaceSwapsAndEraseForgets) {
  FakeClock clock;
  ModelCache cache(options(250, &clock));
  put(cache, "a", 100);
  put(cache, "b", 100);
  use(cache, "a", 2);
  put(cache, "c", 100);  // evicts b
  ASSERT_EQ(cache.acquire("b"), nullptr);
  Result<ModelCache::Handle> back =
      cache.admit("b", "model 'b'", "b", {model(), 100, 0.01}, ModelCache::Admit::kOnDemand, nullptr);
  ASSERT_TRUE(back.is_ok());  // evicts c (no use) rather than a
  EXPECT_EQ(resident(cache), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(cache.counts("b").misses, 1);
  EXPECT_EQ(cache.counts("a").hits, 2);
  EXPECT_GT(cache.value("b"), 0.0);  // the reload was an access
  // A second thread's reload of the same model finds the first one's and keeps it.
  Result<ModelCache::Handle> twice =
      cache.admit("b", "model 'b'", "b", {model(), 100, 0.01}, ModelCache::Admit::kOnDemand, nullptr);
  ASSERT_TRUE(twice.is_ok());
  EXPECT_EQ(twice.value(), back.value());
  EXPECT_EQ(cache.counts("b").misses, 1);
  // kReplace swaps the loaded copy, bytes too.
  ModelCache::Handle fresh = model();
  ASSERT_TRUE(cache.admit("b", "model 'b'", "b", {fresh, 150, 0.01}, ModelCache::Admit::kReplace, nullptr).is_ok());
  EXPECT_EQ(cache.peek("b"), fresh);
  EXPECT_EQ(cache.held_bytes(), 250);
  EXPECT_NE(cache.erase("b"), nullptr);
  EXPECT_FALSE(cache.resident("b"));
  EXPECT_EQ(cache.counts("b").misses, 0);  // forgotten
  EXPECT_EQ(cache.held_bytes(), 100);
}

TEST(ModelCache, UnlimitedNeverEvicts) {
  FakeClock clock;
  ModelCache cache(options(0, &clock));
  for (int i = 0; i < 50; ++i) put(cache, "m" + std::to_string(i), int64_t{1} << 40);
  EXPECT_EQ(cache.resident_keys().size(), 50u);
}

TEST(ModelCache, MetricsCountHitsMissesEvictionsAndBytes) {
  ServeMetrics metrics;
  FakeClock clock;
  ModelCache cache(options(200, &clock), metrics.cache());
  put(cache, "a", 100);
  put(cache, "b", 100);
  use(cache, "a", 3);
  put(cache, "c", 100);  // evicts b
  ASSERT_TRUE(cache.admit("b", "model 'b'", "b", {model(), 100, 0.01}, ModelCache::Admit::kOnDemand, nullptr).is_ok());
  EXPECT_FALSE(cache.admit("z", "model 'z'", "z", {model(), 500, 0.01}, ModelCache::Admit::kInitial, nullptr).is_ok());
  const std::string text = metrics.render();
  for (const char* line : {"sdx_cache_hits_total{model=\"a\"} 3", "sdx_cache_evictions_total{model=\"b\"} 1",
                           "sdx_cache_evictions_total{model=\"c\"} 1", "sdx_cache_misses_total{model=\"b\"} 1",
                           "sdx_cache_refusals_total{model=\"z\"} 1", "sdx_cache_model_bytes{model=\"c\"} 0",
                           "sdx_cache_model_bytes{model=\"b\"} 100", "sdx_cache_bytes 200",
                           "sdx_cache_budget_bytes 200"})
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
}

// Threads look models up, hold them for a while (a request running) and reload what was evicted, on a
// budget of 3 of 6 models. Nothing held is ever evicted (a held model's handle stays the resident one),
// and the bytes held stay within the budget and equal to the sum of the resident models'.
TEST(ModelCacheConcurrency, LookupsReloadsAndEvictionsDoNotRace) {
  ModelCache::Options o;
  o.budget_bytes = 300;
  ModelCache cache(o);
  constexpr int kModels = 6, kThreads = 6, kRounds = 400;
  std::atomic<int> refused{0}, evicted_while_held{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const std::string key = "m" + std::to_string((t * 7 + i * (t + 1)) % kModels);
        ModelCache::Handle h = cache.acquire(key);
        if (!h) {
          Result<ModelCache::Handle> r =
              cache.admit(key, key, key, {model(), 100, 0.001}, ModelCache::Admit::kOnDemand, nullptr);
          if (!r.is_ok()) {
            EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
            refused.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          h = r.value();
        }
        std::this_thread::yield();  // "running"
        if (cache.peek(key) != h) evicted_while_held.fetch_add(1, std::memory_order_relaxed);
        EXPECT_LE(cache.held_bytes(), 300);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(evicted_while_held.load(), 0);
  EXPECT_EQ(cache.held_bytes(), static_cast<int64_t>(cache.resident_keys().size()) * 100);
  EXPECT_LE(cache.resident_keys().size(), 3u);
  int64_t evictions = 0;
  for (int m = 0; m < kModels; ++m) evictions += cache.counts("m" + std::to_string(m)).evictions;
  EXPECT_GT(evictions, 0);
}

}  // namespace
}  // namespace sdx::serve
