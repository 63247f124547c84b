// Stopping a run in progress: the terminate flag of onnxruntime's RunOptions, for sdx.
//
//   std::atomic<bool> stop{false};                 // owned by the caller; another thread may set it
//   { runtime::TerminateScope scope(&stop);        // for the run on this thread
//     Status s = session.run(...); }               // kCancelled when `stop` was set during the run
//
// The executors check the flag between two steps (slot by slot, replay, loop bodies on this thread): a
// kernel in progress finishes, nothing is left half-written that the next run depends on, and the
// next run recomputes every step from its inputs. One acquire load per step; none when no flag is set.
#pragma once

#include <atomic>

#include "core/status.h"

namespace sdx::runtime {

// The flag of the run on this thread (null: none), for the extent of the scope; scopes nest.
class TerminateScope {
 public:
  explicit TerminateScope(const std::atomic<bool>* flag);
  ~TerminateScope();
  TerminateScope(const TerminateScope&) = delete;
  TerminateScope& operator=(const TerminateScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

const std::atomic<bool>* current_terminate_flag();

// The status of a run stopped by its flag.
Status terminated_status();

// Whether `flag` (current_terminate_flag(), read once per run) asks the run to stop. The acquire pairs
// with the release store of whoever sets it (RunOptions.terminate): that store publishes nothing but
// the request itself.
inline bool terminate_requested(const std::atomic<bool>* flag) {
  return flag && flag->load(std::memory_order_acquire);
}

}  // namespace sdx::runtime
