#include "runtime/plan_entry.h"

#include "runtime/jit_plan.h"
#include "runtime/replay.h"

namespace sdx::runtime {

PlanEntry::PlanEntry() = default;
PlanEntry::~PlanEntry() = default;

SlotState PlanEntry::slot_state(size_t s) const {
  if (evicted.load(std::memory_order_acquire) || passivated.load(std::memory_order_acquire)) return SlotState::kEvicted;
  switch (phase) {
    case PlanPhase::kWarmup: return warmup_runs == 0 ? SlotState::kUninitialized : SlotState::kWarmup;
    case PlanPhase::kShapesFrozen: return SlotState::kFrozen;
    case PlanPhase::kCaptured:
    case PlanPhase::kReplaying: {
      // Slots produced by an eager step (gap or slot by slot) stay FROZEN: only captured ones replay.
      const plan::Slot& slot = plan->slots()[s];
      if (replay && slot.producer_step >= 0 &&
          replay->node_phases()[static_cast<size_t>(slot.producer_step)] != NodePhase::kCaptured)
        return SlotState::kFrozen;
      return phase == PlanPhase::kCaptured ? SlotState::kCapturing : SlotState::kReplaying;
    }
  }
  return SlotState::kUninitialized;
}

}  // namespace sdx::runtime
