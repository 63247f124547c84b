#include "runtime/context.h"

#include <algorithm>

#include "runtime/replay.h"

namespace sdx::runtime {

std::vector<bool> tainted_slots(const plan::Plan& plan) {
  // Values computed from a data-dependent step's output have data-dependent shapes too.
  std::vector<bool> tainted(plan.slots().size(), false);
  for (const plan::Step& st : plan.steps()) {
    bool t = st.gap;
    for (int in : st.inputs) t = t || (in >= 0 && tainted[static_cast<size_t>(in)]);
    if (t)
      for (int out : st.outputs)
        if (out >= 0) tainted[static_cast<size_t>(out)] = true;
  }
  return tainted;
}

std::vector<plan::BufferRequest> planning_requests(const plan::Plan& plan, const std::vector<RecordedSlot>& rec,
                                                   std::vector<int>* request_slot) {
  const std::vector<bool> tainted = tainted_slots(plan);
  // A root slot lives until the last reader of any view of it (a requested output lives to the
  // end); a view that is shared with a sequence or data-dependent keeps its root out.
  std::vector<int> last(plan.slots().size());
  std::vector<bool> blocked(plan.slots().size(), false);
  for (size_t s = 0; s < plan.slots().size(); ++s) last[s] = plan.slots()[s].last;
  for (size_t s = 0; s < plan.slots().size(); ++s) {
    int r = rec[s].view_of;
    if (r < 0) continue;
    while (rec[static_cast<size_t>(r)].view_of >= 0) r = rec[static_cast<size_t>(r)].view_of;
    last[static_cast<size_t>(r)] = std::max(last[static_cast<size_t>(r)], plan.slots()[s].last);
    if (rec[s].shared || tainted[s]) blocked[static_cast<size_t>(r)] = true;
  }
  std::vector<plan::BufferRequest> requests;
  for (size_t s = 0; s < plan.slots().size(); ++s) {
    const plan::Slot& slot = plan.slots()[s];
    const RecordedSlot& r = rec[s];
    if (slot.kind != plan::SlotKind::kIntermediate || !r.seen || !r.stable || r.shared || slot.requested_output) continue;
    if (r.view_of >= 0 || blocked[s]) continue;        // views live in their root's memory
    if (tainted[s]) continue;                          // data-dependent shape
    if (!dtype_is_byte_addressable(r.dtype)) continue;  // strings, packed types
    requests.push_back({static_cast<int64_t>(dtype_storage_bytes(r.dtype, r.shape.numel())), slot.first, last[s], false});
    request_slot->push_back(static_cast<int>(s));
  }
  return requests;
}

Context::~Context() {
  for (auto& e : entries_) cache_->forget(e.get());
  outputs_.clear();
  for (auto& e : entries_) release_memory(*e);
}

void Context::release_memory(PlanEntry& e) {
  if (last_ == &e || outputs_owner_ == &e) {  // may hold the entry's frozen output tensors
    outputs_.clear();
    outputs_owner_ = nullptr;
  }
  e.drop_memory([this](FrozenBlock b) { cache_->pool().release(std::move(b.block), b.bytes, b.dtype, Device::kCpu); });
}

void Context::drop(size_t i) {
  PlanEntry* e = entries_[i].get();
  cache_->forget(e);
  release_memory(*e);
  if (last_ == e) last_ = nullptr;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Context::reclaim() {
  for (size_t i = entries_.size(); i-- > 0;) {
    PlanEntry& e = *entries_[i];
    // Acquire pairs with the cache's release store: the cache no longer counts this entry.
    if (e.evicted.load(std::memory_order_acquire)) {
      drop(i);
    } else if (e.passivated.load(std::memory_order_acquire) && !e.blocks.empty()) {
      release_memory(e);  // back to WARMUP with the record kept; the next call re-freezes from it
    }
  }
}

PlanEntry& Context::entry_for(const std::vector<int>& outputs, const ShapeSignature& sig, ExecutionMode mode,
                              uint64_t hash, const std::shared_ptr<const plan::Plan>& plan) {
  for (auto& e : entries_)
    if (e->hash == hash && e->mode == mode && e->outputs == outputs && e->signature == sig) return *e;
  auto e = std::make_unique<PlanEntry>();
  e->outputs = outputs;
  e->signature = sig;
  e->mode = mode;
  e->hash = hash;
  e->plan = plan;
  e->recorder = std::make_unique<ShapeRecorder>(*plan);
  entries_.push_back(std::move(e));
  cache_->admit(entries_.back().get());
  return *entries_.back();
}

}  // namespace sdx::runtime
