// LoopRecorder: the loop analysis of one execution of one Loop node. The Loop kernel makes one per
// execution when the session's policy has analysis on (analysis/loop_policy.h), hands it the carried
// values after every `stride`-th iteration, and at the end (or when a guard stops the loop) asks for the
// report (analysis/loop_report.h): each carried value's evolution and the termination prediction.
//
//   analysis::LoopRecorder rec(policy, condition, {"x", "i"}, trip_count);   // condition: loop_condition.h
//   for (int64_t it = 0; ...; ++it) {
//     ... run the body: state = the carried values it produced, cond = its condition ...
//     if (rec.wants(it)) rec.record(it, state, cond);
//   }
//   analysis::LoopReport r = rec.finish("loop0", iterations, "max_loop_iterations", seconds);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/loop_condition.h"
#include "analysis/loop_policy.h"
#include "analysis/loop_report.h"
#include "analysis/loop_trace.h"
#include "core/datum.h"

namespace sdx::analysis {

class LoopRecorder {
 public:
  // names: one per carried value (the body's inputs 2...). condition must outlive the recorder.
  LoopRecorder(const LoopPolicy& policy, const LoopCondition& condition, std::vector<std::string> names,
               std::optional<int64_t> trip_count);

  bool wants(int64_t iteration) const { return trace_.wants(iteration); }
  // The carried values after iteration `iteration` (0-based) and the condition it produced. A value with no
  // statistics (a sequence, a string tensor) is recorded as untraced, with why.
  void record(int64_t iteration, const std::vector<Datum>& state, bool cond);
  // The report after `iterations` iterations; stopped_by is "" when the loop ended by itself, else the
  // option of the guard that stopped it ("max_loop_iterations", "max_loop_seconds").
  LoopReport finish(const std::string& node, int64_t iterations, const std::string& stopped_by, double seconds) const;

 private:
  const LoopPolicy& policy_;
  const LoopCondition& condition_;
  std::optional<int64_t> trip_count_;
  LoopTrace trace_;                    // the carried values, then the condition (0/1)
  std::vector<std::string> untraced_;  // per carried value: why it has no statistics ("" when it has)
};

}  // namespace sdx::analysis
