// LoopPolicy: what a session asks of its Loop nodes, set once when it loads (runtime::SessionOptions::loops,
// the loop_* rows of runtime/session_options.inc) and read by the Loop kernel through its context
// (backend/loop_host.h). Two parts: the guards, always on (a Loop running more than max_iterations
// iterations or longer than max_seconds stops with an error), and the analysis, off by default (per-iteration
// statistics of the carried values in a ring, and at the loop's end a report: analysis/loop_report.h).
//
//   analysis::LoopPolicy p;           // the defaults: analysis off, 2^24 iterations, no time limit
//   p.analysis = true;
//   p.stride = 10;                    // record every 10th iteration
//   p.evolution.window = 128;         // classify the last 128 samples
#pragma once

#include <cstdint>

#include "analysis/evolution.h"

namespace sdx::analysis {

struct LoopPolicy {
  // Record per-iteration statistics of every carried value and report each Loop's evolution and
  // termination (analysis/loop_report.h). Off: the Loop kernel does nothing beyond the guards.
  bool analysis = false;
  int64_t stride = 1;  // record iterations 0, stride, 2*stride, ... (>= 1)
  int ring = 256;      // samples kept per Loop execution (the latest ones; >= 8)
  // The thresholds of the evolution classes (analysis/evolution.h).
  EvolutionOptions evolution;
  // A Loop that would start iteration max_iterations + 1 stops with an error, trip count or not.
  int64_t max_iterations = int64_t{1} << 24;
  // A Loop running longer than this many seconds (one execution of the node) stops with an error; 0 = never.
  double max_seconds = 0;
};

}  // namespace sdx::analysis
