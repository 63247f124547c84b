// LoopMonitor: one session's loop policy (analysis/loop_policy.h) and the reports its Loop nodes made
// (analysis/loop_report.h). A session creates one when it loads and hands it to its executors
// (runtime::GraphExecutor::set_loop_monitor), which lend it to the Loop kernel through the kernel context
// (backend/loop_host.h); a subgraph body's session shares its parent's, so nested loops report there too.
// The policy is fixed at construction; reports are added by any thread running the session and kept up to
// `capacity` (the oldest are dropped and counted).
//
//   auto monitor = std::make_shared<analysis::LoopMonitor>(options.loops);
//   monitor->add(recorder.finish(iterations, ""));          // the Loop kernel, at the loop's end
//   for (const analysis::LoopReport& r : monitor->reports()) std::cout << r.describe();
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "analysis/loop_policy.h"
#include "analysis/loop_report.h"

namespace sdx::analysis {

class LoopMonitor {
 public:
  explicit LoopMonitor(LoopPolicy policy, size_t capacity = 256) : policy_(policy), capacity_(capacity ? capacity : 1) {}

  const LoopPolicy& policy() const { return policy_; }
  void add(LoopReport report);
  // The kept reports, oldest first.
  std::vector<LoopReport> reports() const;
  // Reports dropped because more than `capacity` were made since the last clear().
  int64_t dropped() const;
  void clear();

 private:
  const LoopPolicy policy_;
  const size_t capacity_;
  mutable std::mutex mutex_;  // guards reports_ and dropped_
  std::deque<LoopReport> reports_;
  int64_t dropped_ = 0;
};

}  // namespace sdx::analysis
