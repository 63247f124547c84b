#include "runtime/plan_phase.h"

namespace sdx::runtime {

const char* plan_phase_name(PlanPhase p) {
  switch (p) {
    case PlanPhase::kWarmup: return "WARMUP";
    case PlanPhase::kShapesFrozen: return "SHAPES_FROZEN";
    case PlanPhase::kCaptured: return "CAPTURED";
    case PlanPhase::kReplaying: return "REPLAYING";
  }
  return "?";
}

const char* slot_state_name(SlotState s) {
  switch (s) {
    case SlotState::kUninitialized: return "UNINITIALIZED";
    case SlotState::kWarmup: return "WARMUP";
    case SlotState::kFrozen: return "FROZEN";
    case SlotState::kCapturing: return "CAPTURING";
    case SlotState::kReplaying: return "REPLAYING";
    case SlotState::kEvicted: return "EVICTED";
  }
  return "?";
}

const char* node_phase_name(NodePhase p) {
  switch (p) {
    case NodePhase::kSlotBySlot: return "SLOT_BY_SLOT";
    case NodePhase::kCaptured: return "CAPTURED";
    case NodePhase::kGap: return "GAP";
  }
  return "?";
}

}  // namespace sdx::runtime
