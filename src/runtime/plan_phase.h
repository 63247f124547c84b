// The states of the plan lifecycle (the DSP document's Plan Lifecycle):
//
//   plan phase:  WARMUP -> SHAPES_FROZEN -> CAPTURED -> REPLAYING
//   slot state:  UNINITIALIZED -> WARMUP -> FROZEN -> CAPTURING -> REPLAYING, or EVICTED
//   node phase:  SLOT_BY_SLOT (eager), CAPTURED (bound into the replay handle), GAP (data-dependent, eager)
#pragma once

#include <cstdint>

namespace sdx::runtime {

enum class PlanPhase : uint8_t { kWarmup, kShapesFrozen, kCaptured, kReplaying };
enum class SlotState : uint8_t { kUninitialized, kWarmup, kFrozen, kCapturing, kReplaying, kEvicted };
enum class NodePhase : uint8_t { kSlotBySlot, kCaptured, kGap };

const char* plan_phase_name(PlanPhase p);
const char* slot_state_name(SlotState s);
const char* node_phase_name(NodePhase p);

}  // namespace sdx::runtime
