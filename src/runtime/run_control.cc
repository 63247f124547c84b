#include "runtime/run_control.h"

namespace sdx::runtime {

namespace {
thread_local const std::atomic<bool>* t_terminate = nullptr;
}  // namespace

TerminateScope::TerminateScope(const std::atomic<bool>* flag) : previous_(t_terminate) { t_terminate = flag; }

TerminateScope::~TerminateScope() { t_terminate = previous_; }

const std::atomic<bool>* current_terminate_flag() { return t_terminate; }

Status terminated_status() {
  return Status(StatusCode::kCancelled, "Exiting due to terminate flag being set to true.");
}

}  // namespace sdx::runtime
