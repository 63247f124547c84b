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

// The lifecycle state is private: the Executor (runtime/executor.h), which owns the transitions, writes
// it; capture (ReplayCapturer and ReplayHandle, runtime/replay.cc) reads the frozen tensors, may refuse
// replay and arms the JIT segments; everyone else reads it through the accessors. The key is fixed at construction.
class PlanEntry {
 public:
  // A new entry in WARMUP, recording shapes for its first calls.
  PlanEntry(std::vector<int> outputs, ShapeSignature signature, ExecutionMode mode, uint64_t hash,
            std::shared_ptr<const plan::Plan> plan);
  ~PlanEntry();
  PlanEntry(const PlanEntry&) = delete;
  PlanEntry& operator=(const PlanEntry&) = delete;

  // Key: requested outputs (positions in Session::outputs()), input signature, mode.
  const std::vector<int> outputs;
  const ShapeSignature signature;
  const ExecutionMode mode;
  const uint64_t hash;
  const std::shared_ptr<const plan::Plan> plan;

  PlanPhase phase() const { return phase_; }
  int warmup_runs() const { return warmup_runs_; }
  // The warmup record, kept after freezing (passivation re-freezes from it).
  const std::vector<RecordedSlot>& shapes() const { return shapes_; }
  // SHAPES_FROZEN and later: the frozen tensors by ir::Value index (undefined = not planned), the memory
  // plan, and the frozen bytes held (intermediates + outputs + static inputs).
  const std::vector<Tensor>& planned() const { return planned_; }
  const plan::MemoryPlan& memory() const { return memory_; }
  int64_t bytes() const { return bytes_; }
  bool holds_memory() const { return !blocks_.empty(); }
  // CPU_JIT: fused segments and their kernels, built with the frozen shapes (null: JIT off).
  const JitPlan* jit() const { return jit_.get(); }
  // CAPTURED and later (null before, or when replay stopped).
  ReplayHandle* replay() const { return replay_.get(); }
  // Why this entry must not be captured (or replayed again); null when it may.
  const char* no_replay_reason() const { return no_replay_reason_; }
  // Inputs read where the caller keeps them (no static buffer, no copy on replay): those that came at the
  // same address in the warmup call and the freezing call (Executor::choose_borrowed). Empty: none.
  const std::vector<bool>& borrowed() const { return borrowed_; }
  int num_borrowed() const;
  // Statistics: calls, replayed calls, and the rolling average latency (the mean of the first 100 calls,
  // then an EMA over ~100).
  int64_t calls() const { return calls_; }
  int64_t replays() const { return replays_; }
  double avg_us() const { return avg_us_; }

  // A recorded warmup (a bundle's or the disk plan cache's) for an entry that has not run: the executor
  // freezes from it on the next call, with no warmup run. False (nothing changed) once the entry ran.
  bool seed(const std::vector<RecordedSlot>& record);

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

 private:
  friend class Executor;         // the lifecycle: warmup -> freeze -> capture -> replay
  friend struct ReplayCapturer;  // capture: reads the frozen tensors, may refuse replay
  friend class ReplayHandle;     // arms the entry's JIT segments at the end of capture

  PlanPhase phase_ = PlanPhase::kWarmup;
  int warmup_runs_ = 0;
  std::unique_ptr<ShapeRecorder> recorder_;  // WARMUP only
  std::vector<RecordedSlot> shapes_;
  std::vector<Tensor> planned_;
  plan::MemoryPlan memory_;
  std::vector<FrozenBlock> blocks_;
  int64_t bytes_ = 0;
  std::unique_ptr<JitPlan> jit_;
  std::unique_ptr<ReplayHandle> replay_;
  const char* no_replay_reason_ = nullptr;
  std::vector<const void*> last_inputs_;  // the caller's input addresses at the last warmup call
  std::vector<bool> borrowed_;
  bool no_borrow_ = false;  // borrowed inputs moved too often (or aliased an output): copies from then on
  int borrow_moves_ = 0;
  int64_t calls_ = 0, replays_ = 0;
  double avg_us_ = 0;
};

template <typename F>
void PlanEntry::drop_memory(F&& release) {
  replay_.reset();
  planned_.clear();
  for (FrozenBlock& b : blocks_) release(std::move(b));
  blocks_.clear();
  bytes_ = 0;
  if (phase_ != PlanPhase::kWarmup) phase_ = PlanPhase::kWarmup;
}

}  // namespace sdx::runtime
