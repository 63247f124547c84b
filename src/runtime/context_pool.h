// ContextPool: idle execution contexts of one Session, for callers that do not own one (the Datum
// run, the Python binding). A caller takes a context for one call and gives it back. The common case,
// one caller at a time, takes and returns the context through one atomic slot (no lock); concurrent
// callers beyond it fall back to a mutex-guarded list.
//
//   std::unique_ptr<Context> ctx = pool.acquire();   // idle or new
//   session.run(*ctx, ...);
//   pool.release(std::move(ctx));
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/context.h"

namespace sdx::runtime {

class Session;

class ContextPool {
 public:
  explicit ContextPool(const Session* session) : session_(session) {}
  ~ContextPool();
  ContextPool(const ContextPool&) = delete;
  ContextPool& operator=(const ContextPool&) = delete;

  std::unique_ptr<Context> acquire();
  void release(std::unique_ptr<Context> ctx);

 private:
  const Session* session_;
  // The fast slot. The release store publishes the context's state (plans, frozen memory) written by
  // the thread that used it last; the acquire exchange makes it visible to the next user.
  std::atomic<Context*> cached_{nullptr};
  std::mutex mu_;  // guards overflow_ only
  std::vector<std::unique_ptr<Context>> overflow_;
};

}  // namespace sdx::runtime
