// Context: the mutable execution state of one caller of a Session. Sessions keep
// a pool of contexts, so concurrent callers never share one.
//
// Per input-shape signature (element types and shapes of the fed inputs) a
// context goes through the first phases of the plan lifecycle:
//   WARMUP        runs slot by slot, recording every slot's type and shape
//                 (SessionOptions::warmup_runs runs, default 1);
//   SHAPES_FROZEN every intermediate whose shape is stable and whose memory is
//                 not shared (views, sequence items, outputs) gets planned
//                 memory, allocated once with the memory planner; kernels asking
//                 for exactly that type and shape write into it.
// A call with a new signature starts its own warmup; nothing planned for one
// signature is ever used for another.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "plan/memory_planner.h"
#include "runtime/shape_recorder.h"

namespace sdx::runtime {

enum class PlanPhase : uint8_t { kWarmup, kShapesFrozen };
const char* plan_phase_name(PlanPhase p);

using ShapeSignature = std::vector<std::pair<DType, Shape>>;

// Which slots get planned memory, as buffer requests (request_slot[i] = plan slot of request i):
// intermediates with a recorded, stable, fixed-size type and shape whose memory is not shared,
// that are not requested outputs and not produced by a data-dependent (gap) step.
std::vector<plan::BufferRequest> planning_requests(const plan::Plan& plan, const std::vector<RecordedSlot>& recorded,
                                                   std::vector<int>* request_slot);

class Context {
 public:
  struct Entry {
    ShapeSignature signature;
    PlanPhase phase = PlanPhase::kWarmup;
    int warmup_runs = 0;
    std::unique_ptr<ShapeRecorder> recorder;
    std::vector<Tensor> planned;  // by ir::Value index; undefined = not planned
    plan::MemoryPlan memory;
  };

  // Signatures kept per context; the least recently used one beyond this is dropped with its
  // memory, so a caller cycling through many shapes does not grow memory without bound.
  static constexpr size_t kMaxSignatures = 8;

  // The entry for a signature, created on first use (and marked most recently used).
  Entry& entry_for(const ShapeSignature& signature, const plan::Plan& plan);
  // Allocates planned memory from the warmup record and moves the entry to SHAPES_FROZEN.
  Status freeze(Entry& entry, const plan::Plan& plan);
  const std::vector<std::unique_ptr<Entry>>& entries() const { return entries_; }

 private:
  // Least recently used first. Few signatures per caller: a linear search is right.
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace sdx::runtime
