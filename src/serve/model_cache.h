// The model cache of sdx-serve: which loaded models stay in memory under --memory-budget, and which are
// evicted (to be reloaded on demand) when a load needs room. It holds the loaded models (type-erased
// handles) of both the model repository (model_repository.h) and the sdx.v1 uploads (model_store.h), so
// one budget covers both; the owners keep what they need to reload a model it evicted.
//
//   serve::ModelCache cache({.budget_bytes = 2 << 30}, metrics.cache());
//   serve::ModelCache::Handle h = cache.acquire("repository/add");    // a hit; null: not loaded
//   if (!h) {
//     auto model = load_it();                                         // outside any lock, timed
//     std::vector<serve::ModelCache::Handle> dropped;                 // destroyed after the caller unlocks
//     sdx::Result<serve::ModelCache::Handle> r = cache.admit(
//         "repository/add", "model 'add'", "add", {model, model_bytes, load_seconds},
//         serve::ModelCache::Admit::kOnDemand, &dropped);             // evicts to make room, or refuses
//   }
//
// Value. Each loaded model has
//
//   value = F × C / B
//
//   F  its access frequency: every lookup that finds it (and the on-demand reload a request caused) adds 1,
//      and the sum decays exponentially, halving every `half_life_seconds` (60 s by default), so what was
//      popular an hour ago does not outweigh what is popular now;
//   C  its load cost: the measured wall time of loading it (parse, verify, optimize, compile), what the
//      next request pays if it is evicted; at least 1 µs;
//   B  its bytes: sdx::Session::weight_bytes() of its sessions (the constant tensors a loaded model keeps,
//      the part of its memory known at load), at least 4096 (a session's own bookkeeping, which also keeps
//      the value of a model without weights finite).
//
// F × C estimates the reload time an eviction would cost per unit of time; dividing by B makes it the cost
// per byte freed, so evicting the lowest values first frees the most memory for the least reload time
// expected. It is GreedyDual-Size-Frequency (Cherkasova, 1998) with exponential decay in place of its
// aging term. Ties go to the least recently used or loaded, then to the key. Frequencies survive an
// eviction (a model that comes back keeps its history) and are forgotten by erase().
//
// Eviction. When admitting a model would take the held bytes past the budget, models not in use are
// evicted, lowest value first, until it fits. "In use" is a handle held outside the cache (a request
// running on the model): use_count() > 1 is exact here because every copy of a handle leaves the cache
// under mutex_ (acquire, admit), so a holder's copy is counted before the cache can look at it. A model
// that cannot fit even after every evictable one went (bigger than the budget, or the rest in use) is
// refused with RESOURCE_EXHAUSTED naming it, its bytes, the budget and what is held, and nothing is
// evicted for it. The budget bounds what the cache holds: a load in flight holds its model beside it until
// admit() decides. Budget 0: unlimited, nothing is ever evicted (the server before the cache).
//
// Thread-safe. The cache never calls out while it holds its mutex, so owners may call it under their own
// mutex (lock order: owner, then cache). Handles it lets go (evicted or replaced) go to `released`, for the
// caller to destroy after it unlocks (a session's destructor joins threads).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sdx/status.h"
#include "serve/serve_metrics.h"

namespace sdx::serve {

class ModelCache {
 public:
  using Clock = std::chrono::steady_clock;
  using Handle = std::shared_ptr<const void>;

  struct Options {
    int64_t budget_bytes = 0;         // 0: unlimited
    double half_life_seconds = 60.0;  // F halves in this time
    std::function<Clock::time_point()> clock;  // null: Clock::now (tests give their own)
  };
  // A model just loaded, as admit() is told of it.
  struct Load {
    Handle handle;
    int64_t bytes = 0;
    double load_seconds = 0;
  };
  enum class Admit {
    kInitial,   // a load at start or by the repository API: no access counted; a held copy is kept
    kOnDemand,  // a request's reload of an evicted model: a miss and an access; a held copy is kept
    kReplace,   // a reload by the repository API: replaces a held copy
  };
  struct Counts {
    int64_t hits = 0, misses = 0, evictions = 0, refusals = 0;
  };

  ModelCache();  // unlimited, no metrics
  explicit ModelCache(Options options, CacheMetrics* metrics = nullptr);
  ~ModelCache();
  ModelCache(const ModelCache&) = delete;
  ModelCache& operator=(const ModelCache&) = delete;

  // The model's handle, counted as a hit and an access; null when it is not loaded (never admitted,
  // evicted or erased).
  Handle acquire(const std::string& key);
  // The same without counting anything ("is it loaded?").
  Handle peek(const std::string& key) const;
  // Takes a loaded model in: `description` names it in errors ("model 'add'"), `label` in the metrics.
  // When the key is loaded already (another thread got there first) and `how` is not kReplace, that
  // handle is returned and `load` is dropped. ResourceExhausted when it does not fit (see above).
  Result<Handle> admit(const std::string& key, const std::string& description, const std::string& label, Load load,
                       Admit how, std::vector<Handle>* released);
  // Forgets the key (an unload): its handle, null when it was not loaded, for the caller to drop.
  Handle erase(const std::string& key);

  bool resident(const std::string& key) const { return peek(key) != nullptr; }
  int64_t budget_bytes() const { return options_.budget_bytes; }
  int64_t held_bytes() const;
  // The value of a loaded model now (see above); 0 when it is not loaded.
  double value(const std::string& key) const;
  std::vector<std::string> resident_keys() const;
  Counts counts(const std::string& key) const;

 private:
  struct Entry;
  Clock::time_point now() const { return options_.clock ? options_.clock() : Clock::now(); }
  Entry& record(const std::string& key, const std::string& label);  // mutex_ held
  double value_of(const Entry& e, Clock::time_point t) const;        // mutex_ held
  void access(Entry& e, Clock::time_point t) const;                  // mutex_ held: F += 1
  void evict(Entry& e, std::vector<Handle>* released);               // mutex_ held

  Options options_;
  CacheMetrics* metrics_;  // null: no metrics
  mutable std::mutex mutex_;  // guards entries_ and held_
  std::map<std::string, std::unique_ptr<Entry>> entries_;  // loaded or evicted (history kept)
  int64_t held_ = 0;  // bytes of the loaded entries
};

}  // namespace sdx::serve
