// Termination: predicts how many more iterations a Loop runs, or that it will not end and why, from what
// the caller read off the loop (no graph pattern matching here: the caller says which carried scalar the
// condition compares with which constant, and hands over that scalar's recorded series).
//
//   analysis::TerminationInput in;
//   in.iteration = 37;                                      // iterations run so far
//   in.trip_count = std::nullopt;                           // no M
//   in.condition = analysis::ConditionForm{"x", analysis::Comparison::kGreater, 0.0};   // while x > 0
//   std::vector<double> xs = trace.series(0, analysis::StatField::kMean);
//   in.condition_series = xs;                               // x's samples, oldest first; the last is x now
//   analysis::TerminationReport r = analysis::predict_termination(in);
//   // r.verdict == kWillNotTerminate, r.root_cause.name == "x", r.root_cause.evolution.kind == kDiverging
//   std::string line = r.describe();
//
// How the condition's scalar is extrapolated, by its evolution (analysis/evolution.h):
//   STABLE       it stays where it is: the condition keeps its current value.
//   OSCILLATING  it repeats its last period: the first sample of the cycle that fails the condition.
//   CONVERGING,  the affine recurrence x' = a x + b through the last three samples (a counter is a = 1,
//   DIVERGING    b = 1; x * 1.1 is a = 1.1, b = 0; Newton near its root is a ~ 0): solved for the first
//                sample that fails the condition, or none within `horizon` iterations (or, converging,
//                none ever, when the limit itself satisfies the condition).
//   CHAOTIC, INSUFFICIENT_DATA  no prediction from the condition (UNKNOWN unless a trip count bounds it).
// A trip count gives the exact remaining count; with both, the smaller wins.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/evolution.h"

namespace sdx::analysis {

enum class Comparison { kLess, kLessEqual, kGreater, kGreaterEqual, kNotEqual };
const char* comparison_symbol(Comparison c);  // "<", "<=", ...

// The loop goes on while `variable op threshold`.
struct ConditionForm {
  std::string variable;
  Comparison op = Comparison::kLess;
  double threshold = 0;
  bool holds(double value) const;
  std::string describe() const;  // "x > 0"
};

struct NamedEvolution {
  std::string name;
  EvolutionReport evolution;
};

struct TerminationInput {
  int64_t iteration = 0;                    // iterations already run (the trip count's progress)
  std::optional<int64_t> trip_count;        // the Loop's M, when it has one
  std::optional<ConditionForm> condition;   // when the condition is a carried scalar against a constant
  std::span<const double> condition_series; // that scalar, one sample per `stride` iterations, oldest first;
                                            // the last sample is its value entering the next iteration
  int64_t stride = 1;
  // Classifications of the carried variables; the condition variable's is used when listed here,
  // else its series is classified with TerminationOptions::evolution.
  std::vector<NamedEvolution> carried;
};

struct TerminationOptions {
  EvolutionOptions evolution;
  int64_t horizon = int64_t{1} << 40;    // an extrapolation still true this many iterations ahead never ends
  int64_t simulate_limit = int64_t{1} << 20;  // samples stepped one by one where the model is not monotone
};

enum class TerminationVerdict { kTerminates, kWillNotTerminate, kUnknown };
const char* termination_verdict_name(TerminationVerdict v);  // "TERMINATES", "WILL_NOT_TERMINATE", "UNKNOWN"

struct TerminationReport {
  TerminationVerdict verdict = TerminationVerdict::kUnknown;
  std::optional<int64_t> remaining;  // kTerminates: further iterations of the body
  bool exact = false;                // remaining comes from the trip count (else it is extrapolated)
  std::string bound_by;              // kTerminates: "trip count" or "condition"
  // kWillNotTerminate (and a trip-bounded loop whose condition would never end): the variable that keeps
  // the condition true, and how it evolves.
  std::optional<NamedEvolution> root_cause;
  std::string explanation;           // one sentence
  std::string describe() const;      // "WILL_NOT_TERMINATE: ..."
};

TerminationReport predict_termination(const TerminationInput& in, const TerminationOptions& options = {});

}  // namespace sdx::analysis
