// PlanEntry: one cached plan of one caller context: a requested-output set and an
// input-shape signature, with everything its lifecycle has built so far (the
// warmup record, frozen memory, the replay handle) and its statistics.
//
// Entries are owned by their Context (one caller at a time) and accounted in the
// session's PlanCache; only the fields marked so are touched by other threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "plan/memory_planner.h"
#include "plan/plan.h"
#include "runtime/plan_phase.h"
#include "runtime/session_options.h"
#include "runtime/shape_recorder.h"

namespace sdx::runtime {

class ReplayHandle;
struct JitPlan;

using ShapeSignature = std::vector<std::pair<DType, Shape>>;

// A frozen allocation and how the buffer pool files it.
struct FrozenBlock {
  std::shared_ptr<void> block;
  int64_t bytes = 0;
  DType dtype = DType::kUint8;
};

struct PlanEntry {
  PlanEntry();
  ~PlanEntry();

  // Key: requested outputs (positions in Session::outputs()), input signature, mode.
  std::vector<int> outputs;
  ShapeSignature signature;
  ExecutionMode mode = ExecutionMode::kAuto;
  uint64_t hash = 0;

  std::shared_ptr<const plan::Plan> plan;
  PlanPhase phase = PlanPhase::kWarmup;
  int warmup_runs = 0;
  std::unique_ptr<ShapeRecorder> recorder;  // WARMUP only
  std::vector<RecordedSlot> shapes;         // the warmup record, kept after freezing (passivation re-freezes from it)

  // SHAPES_FROZEN and later.
  std::vector<Tensor> planned;  // by ir::Value index; undefined = not planned
  plan::MemoryPlan memory;
  std::vector<FrozenBlock> blocks;
  int64_t bytes = 0;  // frozen bytes held (intermediates + outputs + static inputs)

  // CPU_JIT: fused segments and their kernels, built with the frozen shapes (null: JIT off).
  std::unique_ptr<JitPlan> jit;

  // CAPTURED and later.
  std::unique_ptr<ReplayHandle> replay;
  // Set when this entry must not be captured (or replayed again) and why.
  const char* no_replay_reason = nullptr;

  // Statistics.
  int64_t calls = 0, replays = 0;
  double avg_us = 0;  // rolling average latency: the mean of the first 100 calls, then an EMA over ~100

  // Plan-cache bookkeeping. last_used is written by the owner (relaxed: it only orders LRU
  // choices). evicted is set by whichever thread evicts, under the cache mutex, and read by
  // the owner without it: the release store publishes that the cache no longer counts this
  // entry, so the owner frees its memory and rebuilds on the next call (acquire load).
  std::atomic<uint64_t> last_used{0};
  std::atomic<bool> evicted{false};
  // Passivated: memory handed back to the pool under memory pressure; metadata kept.
  std::atomic<bool> passivated{false};
  bool registered = false;  // counted in the cache (guarded by the cache mutex)

  // Slot state of plan slot s, as introspection reports it.
  SlotState slot_state(size_t s) const;
  // Frees frozen memory (to `release`), drops the replay handle and returns to SHAPES_FROZEN-less
  // state with the warmup record kept.
  template <typename F>
  void drop_memory(F&& release);
};

template <typename F>
void PlanEntry::drop_memory(F&& release) {
  replay.reset();
  planned.clear();
  for (FrozenBlock& b : blocks) release(std::move(b));
  blocks.clear();
  bytes = 0;
  if (phase != PlanPhase::kWarmup) phase = PlanPhase::kWarmup;
}

}  // namespace sdx::runtime
