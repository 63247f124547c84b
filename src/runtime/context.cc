#include "runtime/context.h"

#include <algorithm>

#include "runtime/replay.h"

namespace sdx::runtime {

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
    } else if (e.passivated.load(std::memory_order_acquire) && e.holds_memory()) {
      release_memory(e);  // back to WARMUP with the record kept; the next call re-freezes from it
    }
  }
}

PlanEntry& Context::entry_for(const std::vector<int>& outputs, const ShapeSignature& sig, ExecutionMode mode,
                              uint64_t hash, const std::shared_ptr<const plan::Plan>& plan) {
  for (auto& e : entries_)
    if (e->hash == hash && e->mode == mode && e->outputs == outputs && e->signature == sig) return *e;
  entries_.push_back(std::make_unique<PlanEntry>(outputs, sig, mode, hash, plan));
  cache_->admit(entries_.back().get());
  return *entries_.back();
}

}  // namespace sdx::runtime
