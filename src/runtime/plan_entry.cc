#include "runtime/plan_entry.h"

#include "runtime/jit_plan.h"
#include "runtime/replay.h"

namespace sdx::runtime {

PlanEntry::PlanEntry(std::vector<int> outputs_, ShapeSignature signature_, ExecutionMode mode_, uint64_t hash_,
                     std::shared_ptr<const plan::Plan> plan_)
    : outputs(std::move(outputs_)), signature(std::move(signature_)), mode(mode_), hash(hash_), plan(std::move(plan_)),
      recorder_(std::make_unique<ShapeRecorder>(*plan)) {}

PlanEntry::~PlanEntry() = default;

int PlanEntry::num_borrowed() const {
  int n = 0;
  for (bool b : borrowed_) n += b ? 1 : 0;
  return n;
}

bool PlanEntry::seed(const std::vector<RecordedSlot>& record) {
  if (calls_ != 0 || warmup_runs_ != 0 || !shapes_.empty()) return false;
  shapes_ = record;
  recorder_.reset();
  return true;
}

SlotState PlanEntry::slot_state(size_t s) const {
  if (evicted.load(std::memory_order_acquire) || passivated.load(std::memory_order_acquire)) return SlotState::kEvicted;
  switch (phase_) {
    case PlanPhase::kWarmup: return warmup_runs_ == 0 ? SlotState::kUninitialized : SlotState::kWarmup;
    case PlanPhase::kShapesFrozen: return SlotState::kFrozen;
    case PlanPhase::kCaptured:
    case PlanPhase::kReplaying: {
      // Slots produced by an eager step (gap or slot by slot) stay FROZEN: only captured ones replay.
      const plan::Slot& slot = plan->slots()[s];
      if (replay_ && slot.producer_step >= 0 &&
          replay_->node_phases()[static_cast<size_t>(slot.producer_step)] != NodePhase::kCaptured)
        return SlotState::kFrozen;
      return phase_ == PlanPhase::kCaptured ? SlotState::kCapturing : SlotState::kReplaying;
    }
  }
  return SlotState::kUninitialized;
}

}  // namespace sdx::runtime
