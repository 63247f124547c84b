#include "runtime/context.h"

#include <algorithm>
#include <cstring>

namespace sdx::runtime {

const char* plan_phase_name(PlanPhase p) {
  switch (p) {
    case PlanPhase::kWarmup: return "WARMUP";
    case PlanPhase::kShapesFrozen: return "SHAPES_FROZEN";
  }
  return "?";
}

std::vector<plan::BufferRequest> planning_requests(const plan::Plan& plan, const std::vector<RecordedSlot>& rec,
                                                   std::vector<int>* request_slot) {
  std::vector<plan::BufferRequest> requests;
  for (size_t s = 0; s < plan.slots().size(); ++s) {
    const plan::Slot& slot = plan.slots()[s];
    const RecordedSlot& r = rec[s];
    if (slot.kind != plan::SlotKind::kIntermediate || !r.seen || !r.stable || r.shared || slot.requested_output) continue;
    if (plan.steps()[static_cast<size_t>(slot.producer_step)].gap) continue;  // data-dependent shape
    if (!dtype_is_byte_addressable(r.dtype)) continue;                        // strings, packed types
    requests.push_back({static_cast<int64_t>(dtype_storage_bytes(r.dtype, r.shape.numel())), slot.first, slot.last, false});
    request_slot->push_back(static_cast<int>(s));
  }
  return requests;
}

Context::Entry& Context::entry_for(const ShapeSignature& signature, const plan::Plan& plan) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i]->signature != signature) continue;
    if (i + 1 != entries_.size()) std::rotate(entries_.begin() + static_cast<std::ptrdiff_t>(i),
                                              entries_.begin() + static_cast<std::ptrdiff_t>(i) + 1, entries_.end());
    return *entries_.back();
  }
  if (entries_.size() >= kMaxSignatures) entries_.erase(entries_.begin());
  auto e = std::make_unique<Entry>();
  e->signature = signature;
  e->recorder = std::make_unique<ShapeRecorder>(plan);
  entries_.push_back(std::move(e));
  return *entries_.back();
}

Status Context::freeze(Entry& entry, const plan::Plan& plan) {
  const std::vector<RecordedSlot>& rec = entry.recorder->slots();
  std::vector<int> request_slot;
  std::vector<plan::BufferRequest> requests = planning_requests(plan, rec, &request_slot);
  SDX_ASSIGN_OR_RETURN(entry.memory, plan::plan_memory(requests), "memory planning");
  entry.planned.assign(plan.graph().values().size(), Tensor());
  auto place = [&](size_t r, const std::shared_ptr<void>& block, char* base) {
    const plan::Slot& slot = plan.slots()[static_cast<size_t>(request_slot[r])];
    const RecordedSlot& rs = rec[static_cast<size_t>(request_slot[r])];
    entry.planned[static_cast<size_t>(slot.value->index())] = Tensor::borrow(rs.dtype, rs.shape, base, block);
  };
  auto allocate_block = [](int64_t bytes) -> std::shared_ptr<void> {
    void* p = cpu_allocator()->allocate(static_cast<size_t>(bytes));
    if (!p) return nullptr;
    // Poison (all-ones bytes: NaN for floats) so a kernel that reads its output before writing it
    // fails loudly instead of depending on what a fresh allocation happened to contain.
    std::memset(p, 0xff, static_cast<size_t>(bytes));
    return std::shared_ptr<void>(p, [](void* q) { cpu_allocator()->free(q); });
  };
  if (entry.memory.chosen == plan::MemoryPlan::Strategy::kArena) {
    std::shared_ptr<void> block = allocate_block(entry.memory.arena_bytes);
    if (!block) return resource_exhausted("cannot allocate the " + std::to_string(entry.memory.arena_bytes) + "-byte arena");
    for (size_t r = 0; r < requests.size(); ++r) place(r, block, static_cast<char*>(block.get()) + entry.memory.offset[r]);
  } else {
    std::vector<std::shared_ptr<void>> buffers;
    for (int64_t bytes : entry.memory.color_bytes) {
      buffers.push_back(allocate_block(bytes));
      if (!buffers.back()) return resource_exhausted("cannot allocate a " + std::to_string(bytes) + "-byte buffer");
    }
    for (size_t r = 0; r < requests.size(); ++r) {
      const auto& block = buffers[static_cast<size_t>(entry.memory.color[r])];
      place(r, block, static_cast<char*>(block.get()));
    }
  }
  entry.phase = PlanPhase::kShapesFrozen;
  entry.recorder.reset();
  return Status::ok();
}

}  // namespace sdx::runtime
