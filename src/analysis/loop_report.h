// LoopReport: what the loop analysis says about one execution of one Loop node: each carried value's
// evolution (analysis/evolution.h), how the condition depends on the carried values, and the termination
// prediction (analysis/termination.h). The Loop kernel builds one at the loop's end, or when a guard stops
// it (analysis/loop_recorder.h); a session keeps them (analysis/loop_report_log.h) for
// sdx::Session::loop_reports(), Python's InferenceSession.loop_reports() and `sdx inspect --loops`.
//
//   analysis::LoopReport r = recorder.finish(iterations, "max_loop_iterations");
//   std::cerr << r.describe();          // several lines
//   std::string line = r.summary();     // one line, for the guard's error
//   std::string json = r.to_json();     // one JSON object
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/evolution.h"
#include "analysis/loop_trace.h"
#include "analysis/termination.h"

namespace sdx::analysis {

struct LoopVariableReport {
  std::string name;                    // the body's input name (the condition: "cond")
  bool traced = true;                  // false: no statistics for this value (note says why)
  std::string note;
  StatField field = StatField::kMean;  // the statistic classified: a scalar's value (mean), a tensor's norm
  ValueStats last;                     // the latest sample's statistics
  EvolutionReport evolution;
  std::vector<double> series;          // `field` of each sample the ring kept, oldest first (for plots)
};

struct LoopReport {
  std::string node;                    // the Loop node's name
  int64_t iterations = 0;              // iterations the body ran
  std::optional<int64_t> trip_count;   // M, when given
  std::string stopped_by;              // "" (it ended), "max_loop_iterations" or "max_loop_seconds"
  int64_t limit_iterations = 0;        // the guard's settings
  double limit_seconds = 0;
  double seconds = 0;                  // wall time of this execution
  int64_t stride = 1;                  // one sample per `stride` iterations
  int64_t samples = 0;                 // samples recorded (the ring keeps the latest ones)
  std::vector<int64_t> sample_iterations;  // the iteration of each sample the ring kept, oldest first
  // How the condition reads the carried values (analysis/loop_condition.h).
  std::string condition;               // "x > 0", or a sentence when it is not that form
  std::vector<std::string> condition_depends_on;
  std::vector<LoopVariableReport> variables;  // the carried values in order, then the condition
  TerminationReport termination;

  std::string describe() const;  // "Loop 'loop0': 1000 iterations, stopped by max_loop_iterations\n  ..."
  std::string summary() const;   // "WILL_NOT_TERMINATE: `x > 0` stays true: x is DIVERGING (...)"
  std::string to_json() const;
};

}  // namespace sdx::analysis
