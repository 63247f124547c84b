#include "analysis/loop_monitor.h"

namespace sdx::analysis {

void LoopMonitor::add(LoopReport report) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reports_.size() == capacity_) {
    reports_.pop_front();
    ++dropped_;
  }
  reports_.push_back(std::move(report));
}

std::vector<LoopReport> LoopMonitor::reports() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {reports_.begin(), reports_.end()};
}

int64_t LoopMonitor::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

void LoopMonitor::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  reports_.clear();
  dropped_ = 0;
}

}  // namespace sdx::analysis
