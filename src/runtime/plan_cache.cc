#include "runtime/plan_cache.h"

#include "obs/diagnostics.h"

#include <algorithm>

namespace sdx::runtime {

PlanCache::PlanCache(int max_count, int64_t budget_bytes)
    : max_count_(std::max(1, max_count)), budget_bytes_(budget_bytes), pool_(budget_bytes / 4) {}

void PlanCache::admit(PlanEntry* entry) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(entry);
  counted_bytes_.push_back(0);
  entry->registered = true;
  entry->last_used.store(tick(), std::memory_order_relaxed);
  enforce(entry);
}

void PlanCache::account(PlanEntry* entry) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(entries_.begin(), entries_.end(), entry);
  if (it == entries_.end()) return;
  const size_t i = static_cast<size_t>(it - entries_.begin());
  bytes_ += entry->bytes() - counted_bytes_[i];
  counted_bytes_[i] = entry->bytes();
  enforce(entry);
}

void PlanCache::forget(PlanEntry* entry) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(entries_.begin(), entries_.end(), entry);
  if (it == entries_.end()) return;
  const size_t i = static_cast<size_t>(it - entries_.begin());
  bytes_ -= counted_bytes_[i];
  entries_.erase(it);
  counted_bytes_.erase(counted_bytes_.begin() + static_cast<std::ptrdiff_t>(i));
  entry->registered = false;
}

void PlanCache::enforce(const PlanEntry* keep) {
  auto lru = [&](bool frozen_only) -> size_t {
    size_t best = entries_.size();
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i] == keep || (frozen_only && counted_bytes_[i] == 0)) continue;
      if (best == entries_.size() ||
          entries_[i]->last_used.load(std::memory_order_relaxed) < entries_[best]->last_used.load(std::memory_order_relaxed))
        best = i;
    }
    return best;
  };
  while (static_cast<int>(entries_.size()) > max_count_) {
    const size_t i = lru(false);
    if (i == entries_.size()) break;
    PlanEntry* e = entries_[i];
    bytes_ -= counted_bytes_[i];
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
    counted_bytes_.erase(counted_bytes_.begin() + static_cast<std::ptrdiff_t>(i));
    e->registered = false;
    ++evictions_;
    obs::Diagnostics& diag = obs::Diagnostics::global();
    diag.record_lazy(obs::DiagCategory::kCache, obs::DiagLevel::kSummary, "EVICTED", [&] {
      return "the plan cache holds at most " + std::to_string(max_count_) +
             " plans; the least recently used one was evicted (its next call warms up again)";
    });
    diag.record_lazy(obs::DiagCategory::kFallback, obs::DiagLevel::kSummary, "EVICTION", [] {
      return std::string("a plan was evicted from the plan cache: its next call warms up slot by slot");
    });
    // Publishes: the cache has let go of e; its owner frees it (acquire load in Context).
    e->evicted.store(true, std::memory_order_release);
  }
  while (bytes_ > budget_bytes_) {
    const size_t i = lru(true);
    if (i == entries_.size()) break;
    bytes_ -= counted_bytes_[i];
    counted_bytes_[i] = 0;
    ++passivations_;
    obs::Diagnostics::global().record_lazy(obs::DiagCategory::kCache, obs::DiagLevel::kSummary, "PASSIVATED", [&] {
      return "plans hold more than the memory budget of " + std::to_string(budget_bytes_) +
             " bytes: the least recently used plan gives its frozen memory back";
    });
    // Publishes: e's memory is no longer counted; its owner hands it to the pool (acquire load).
    entries_[i]->passivated.store(true, std::memory_order_release);
  }
}

PlanCacheStats PlanCache::stats() const {
  PlanCacheStats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.entries = static_cast<int64_t>(entries_.size());
    s.frozen_bytes = bytes_;
    s.evictions = evictions_;
    s.passivations = passivations_;
  }
  s.pool = pool_.stats();
  return s;
}

}  // namespace sdx::runtime
