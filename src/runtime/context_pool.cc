#include "runtime/context_pool.h"

#include "runtime/session.h"

namespace sdx::runtime {

ContextPool::~ContextPool() { delete cached_.exchange(nullptr, std::memory_order_acquire); }

std::unique_ptr<Context> ContextPool::acquire() {
  // Acquire: sees everything the releasing thread wrote into the context (see cached_).
  if (Context* c = cached_.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<Context>(c);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!overflow_.empty()) {
      std::unique_ptr<Context> c = std::move(overflow_.back());
      overflow_.pop_back();
      return c;
    }
  }
  return session_->create_context();
}

void ContextPool::release(std::unique_ptr<Context> ctx) {
  Context* expected = nullptr;
  // Release: publishes the context's state to the next acquire of the slot.
  if (cached_.compare_exchange_strong(expected, ctx.get(), std::memory_order_release, std::memory_order_relaxed)) {
    (void)ctx.release();
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  overflow_.push_back(std::move(ctx));
}

}  // namespace sdx::runtime
