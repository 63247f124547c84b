// Plan introspection (the DSP document's PlanIntrospection): drives a fresh
// context of the session through the plan lifecycle on the given feeds (warmup,
// freeze, capture, one replay) and reports what the plan became: per slot its
// state, wiring, liveness, type, bytes and place in frozen memory, per step its
// node phase, the current plan phase and the memory figures. Feeds that are not
// plain tensors (sequences, optionals) get one observed slot-by-slot run instead.
// Powers `sdx inspect --plan` and InferenceSession.introspect().
//
//   SDX_ASSIGN_OR_RETURN(PlanIntrospection info, introspect(*session, feeds), "");
//   std::cout << format_introspection(info);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plan/memory_planner.h"
#include "runtime/session.h"

namespace sdx::runtime {

struct SlotReport {
  int index = 0;
  std::string name;
  std::string kind;        // input | initializer | intermediate
  std::string producer;    // op type of the producing step ("" for inputs/initializers)
  int producer_step = -1;
  std::vector<int> wiring;  // slots the producing step reads (-1: omitted or outer scope)
  int first = 0, last = 0;
  bool requested_output = false;
  bool view = false;  // aliases another slot's memory (Reshape, Identity, ...)
  bool gap = false;   // produced by a data-dependent step
  std::string state;       // slot state: UNINITIALIZED, WARMUP, FROZEN, CAPTURING, REPLAYING, EVICTED
  std::string node_phase;  // of the producing step once captured: CAPTURED, GAP, SLOT_BY_SLOT ("" otherwise)
  std::string type;        // "float[1, 128]", "" when the slot held no tensor
  int64_t bytes = 0;
  int color = -1;       // coloring buffer, -1 when not planned
  int64_t offset = -1;  // arena offset, -1 when not planned
};

// One CPU_JIT segment of the introspected plan (runtime/jit_plan.h).
struct JitSegmentReport {
  int first_step = 0, last_step = 0;
  std::string description;  // "ELEMENTWISE float32[1, 16]: 200 ops (...), 101 inputs, 1 output"
  double score = 0;
  std::string state;        // FUSED, COMPILING, READY, FAILED, REJECTED, BELOW_THRESHOLD
  std::string status;       // the state with its reason
  double fused_us = 0, unfused_us = 0;  // timed in the replay that checked the kernel (0 before)
};

struct PlanIntrospection {
  int num_steps = 0;
  int num_gap_steps = 0;
  int num_dead_nodes = 0;
  std::string phase;     // the plan phase reached: REPLAYING when the plan could be captured
  std::string fallback;  // why it did not replay ("" when it did)
  int captured_steps = 0, bound_steps = 0, slot_by_slot_steps = 0;
  int elided_steps = 0;   // captured view steps replay skips (Kernel::is_view)
  int placed_inputs = 0;  // graph inputs copied straight into a bound call's output (a KV cache's Concat)
  // Inter-op (inter_op_num_threads > 1): the plan's waves, and the groups of bound calls a replay
  // runs concurrently with the steps in them (0 otherwise).
  int num_waves = 0, concurrent_groups = 0, concurrent_steps = 0;
  std::vector<SlotReport> slots;
  plan::MemoryPlan memory;
  int64_t intermediate_bytes = 0;  // every intermediate that owns memory (views excluded), outputs included
  int64_t frozen_bytes = 0;        // what the frozen plan holds: planned intermediates + static inputs/outputs
  // CPU_JIT: "on" or why it is off; its segments once the plan froze. Introspection waits (up to
  // two minutes) for compiles in flight and replays once more, so the states are final.
  std::string jit;
  double jit_threshold = 0;
  std::vector<JitSegmentReport> jit_segments;
};

// The JIT section of format_introspection ("" when there is nothing to say).
std::string format_jit(const PlanIntrospection& info);

Result<PlanIntrospection> introspect(const Session& session, const std::vector<std::pair<std::string, Datum>>& feeds);

// A table of slots followed by the memory summary.
std::string format_introspection(const PlanIntrospection& info);

}  // namespace sdx::runtime
