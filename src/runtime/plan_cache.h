// PlanCache: the session-wide account of every PlanEntry of every caller context
// (the DSP document's NativePlanCache). Entries are keyed by
//   hash(requested outputs, input-shape content, placeholder count, execution mode)
// within their context (contexts are per caller, so a key never crosses threads),
// and the cache bounds them together:
//   * count cap: beyond max_count entries, the least recently used is evicted: its
//     slots become EVICTED, its owner frees it and re-warms on the next call;
//   * memory budget: while frozen bytes exceed the budget, the least recently used
//     frozen entries are passivated: their buffers go back to the BufferPool, their
//     warmup record stays, and the next call re-freezes without a warmup.
// The hot path never takes the cache mutex: owners read the evicted/passivated flags
// with acquire loads. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/buffer_pool.h"
#include "runtime/plan_entry.h"

namespace sdx::runtime {

struct PlanCacheStats {
  int64_t entries = 0;
  int64_t frozen_bytes = 0;
  int64_t evictions = 0;
  int64_t passivations = 0;
  BufferPoolStats pool;
};

class PlanCache {
 public:
  PlanCache(int max_count, int64_t budget_bytes);
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // Registers a new entry (WARMUP, no memory yet); may evict the least recently used one.
  void admit(PlanEntry* entry);
  // The entry now holds entry->bytes of frozen memory; may passivate others (never `entry`).
  void account(PlanEntry* entry);
  // The owner drops the entry (context destroyed, entry evicted or replaced).
  void forget(PlanEntry* entry);
  // A monotonically increasing stamp for PlanEntry::last_used.
  uint64_t tick() { return clock_.fetch_add(1, std::memory_order_relaxed) + 1; }

  BufferPool& pool() { return pool_; }
  PlanCacheStats stats() const;
  int max_count() const { return max_count_; }
  int64_t budget_bytes() const { return budget_bytes_; }

 private:
  void enforce(const PlanEntry* keep);  // mu_ held

  mutable std::mutex mu_;
  const int max_count_;
  const int64_t budget_bytes_;
  std::vector<PlanEntry*> entries_;
  std::vector<int64_t> counted_bytes_;  // parallel to entries_: bytes counted for each
  int64_t bytes_ = 0;
  int64_t evictions_ = 0, passivations_ = 0;
  std::atomic<uint64_t> clock_{0};
  BufferPool pool_;
};

}  // namespace sdx::runtime
