// Memory layout of a frozen plan: which slots get planned memory, and where every frozen tensor
// sits. Pure functions of the plan, the warmup record and the call's signature, tested without a
// session (tests/plan/memory_layout_test.cc); the runtime allocates the blocks and places the
// tensors (runtime/executor.cc).
//
//   MemoryLayout l = layout_memory(plan, recorded, requested_outputs, static_inputs).value();
//   for (int64_t bytes : l.block_bytes) ... allocate ...
//   for (const Placement& p : l.placements) tensor of p.dtype/p.shape at block p.block + p.offset
//
// Blocks, in order: the intermediates' memory (one arena, or one buffer per color: whichever the
// memory planner found smaller), then one block per requested output with a stable,
// value-independent shape (never shared: the caller reads it after the run), then one per static
// input (replay copies each call's inputs there, so every address is fixed). String inputs get no
// block (block -1): the runtime gives them a tensor of their own.
#pragma once

#include <vector>

#include "core/status.h"
#include "plan/memory_planner.h"
#include "plan/plan.h"
#include "plan/recorded_slot.h"

namespace sdx::plan {

// Slots whose shape may depend on input values: produced by a data-dependent (gap) step or
// computed from one.
std::vector<bool> tainted_slots(const Plan& plan);

// Which slots get planned memory, as buffer requests (request_slot[i] = plan slot of request i):
// intermediates with a recorded, stable, fixed-size type and shape whose memory is not shared,
// that are not requested outputs and not produced by (or computed from) a data-dependent step.
std::vector<BufferRequest> planning_requests(const Plan& plan, const std::vector<RecordedSlot>& recorded,
                                             std::vector<int>* request_slot);

// One graph input of the call: its value and the caller's element type and shape.
struct StaticInput {
  const ir::Value* value = nullptr;
  DType dtype = DType::kUndefined;
  Shape shape;
};

// A frozen tensor: value (ir::Value::index()) lives in block `block` at byte `offset`.
struct Placement {
  int value = -1;
  DType dtype = DType::kUndefined;
  Shape shape;
  int block = -1;  // -1: no planned block (a string input)
  int64_t offset = 0;
};

struct MemoryLayout {
  MemoryPlan memory;                // the planner's result for the intermediates
  std::vector<int64_t> block_bytes;  // per block
  std::vector<DType> block_dtype;    // how the buffer pool files each block
  std::vector<Placement> placements;
  int64_t total_bytes() const;
};

Result<MemoryLayout> layout_memory(const Plan& plan, const std::vector<RecordedSlot>& recorded,
                                   const std::vector<const ir::Value*>& requested_outputs,
                                   const std::vector<StaticInput>& inputs);

}  // namespace sdx::plan
