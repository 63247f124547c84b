// Context: the mutable execution state of one caller of a Session (the DSP
// document's per-thread execution context). A Session serves many contexts at
// once; one context serves one call at a time. Session::run(feeds) takes a
// context from the session's pool for each call; C and C++ callers that want the
// zero-allocation replay path own one (Session::create_context, sdxCreateContext).
//
// Per requested-output set and input-shape signature a context keeps a PlanEntry
// going through the plan lifecycle (see runtime/plan_phase.h):
//   WARMUP        runs slot by slot, recording every slot's type and shape
//                 (SessionOptions::warmup_runs runs, default 1);
//   SHAPES_FROZEN every intermediate with a stable shape whose memory is not shared
//                 gets planned memory, allocated once (buffer coloring or one arena);
//                 requested outputs and the inputs get their own static buffers;
//   CAPTURED      the next call binds every step (Kernel::prepare) into a ReplayHandle;
//   REPLAYING     each later call copies the inputs in and walks the bound calls.
// A call with another signature gets its own entry; nothing frozen for one
// signature is ever used for another. Entries are accounted in the session's
// PlanCache, which may evict or passivate them (see plan_cache.h).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "core/datum.h"
#include "runtime/plan_cache.h"
#include "runtime/plan_entry.h"

namespace sdx::runtime {

class Session;

class Context {
 public:
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Results of the last successful run, in the order its outputs were requested. Valid until
  // the next run on this context (replayed outputs live in the plan's static buffers).
  size_t num_outputs() const { return outputs_.size(); }
  const Datum& output(size_t i) const { return outputs_[i]; }
  // The phase of the plan the last run used (WARMUP before the first run).
  PlanPhase phase() const { return last_ ? last_->phase() : PlanPhase::kWarmup; }
  const PlanEntry* current() const { return last_; }
  const std::vector<std::unique_ptr<PlanEntry>>& entries() const { return entries_; }

 private:
  friend class Session;
  friend class Executor;  // the plan lifecycle: outputs, variables
  explicit Context(PlanCache* cache) : cache_(cache) {}

  // Frees entries the cache evicted and hands passivated memory back to the pool.
  void reclaim();
  // The entry for a key, created (and admitted to the cache) on first use.
  PlanEntry& entry_for(const std::vector<int>& outputs, const ShapeSignature& sig, ExecutionMode mode,
                       uint64_t hash, const std::shared_ptr<const plan::Plan>& plan);
  void release_memory(PlanEntry& e);
  void drop(size_t i);

  PlanCache* cache_;
  std::vector<std::unique_ptr<PlanEntry>> entries_;  // few per caller: linear search is right
  PlanEntry* last_ = nullptr;                        // the replay fast path checks this one first
  std::vector<Datum> outputs_;
  const PlanEntry* outputs_owner_ = nullptr;  // the replayed entry whose static outputs outputs_ holds
  // Initializers this caller overrides (sdxMarkInputVariable): value index -> tensor owned here.
  std::vector<std::pair<int, Tensor>> variables_;
};

}  // namespace sdx::runtime
