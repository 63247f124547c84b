#include "analysis/loop_recorder.h"

#include <algorithm>

namespace sdx::analysis {
namespace {

std::vector<std::string> with_condition(std::vector<std::string> names) {
  names.push_back("cond");
  return names;
}

}  // namespace

LoopRecorder::LoopRecorder(const LoopPolicy& policy, const LoopCondition& condition, std::vector<std::string> names,
                           std::optional<int64_t> trip_count)
    : policy_(policy),
      condition_(condition),
      trip_count_(trip_count),
      trace_(with_condition(std::move(names)),
             {.capacity = static_cast<size_t>(std::max(policy.ring, 1)), .stride = std::max<int64_t>(policy.stride, 1)}),
      untraced_(trace_.names().size() - 1) {}

void LoopRecorder::record(int64_t iteration, const std::vector<Datum>& state, bool cond) {
  std::vector<ValueStats> stats(trace_.names().size());
  for (size_t i = 0; i < state.size() && i < untraced_.size(); ++i) {
    if (!untraced_[i].empty()) continue;
    if (!state[i].is_tensor()) {
      untraced_[i] = "not a tensor";
      continue;
    }
    Result<ValueStats> s = summarize(state[i].as_tensor());
    if (s.is_ok()) stats[i] = s.value();
    else untraced_[i] = s.status().message();
  }
  const double c = cond ? 1 : 0;
  stats.back() = ValueStats{.numel = 1, .norm = c, .min = c, .max = c, .mean = c, .hash = cond ? 1u : 0u};
  (void)trace_.record_stats(iteration, std::move(stats));  // the count always matches: no error to pass on
}

LoopReport LoopRecorder::finish(const std::string& node, int64_t iterations, const std::string& stopped_by,
                                double seconds) const {
  LoopReport r;
  r.node = node;
  r.iterations = iterations;
  r.trip_count = trip_count_;
  r.stopped_by = stopped_by;
  r.limit_iterations = policy_.max_iterations;
  r.limit_seconds = policy_.max_seconds;
  r.seconds = seconds;
  r.stride = trace_.options().stride;
  r.samples = trace_.recorded();
  r.sample_iterations = trace_.iterations();
  const std::vector<std::string>& names = trace_.names();
  const size_t carried = names.size() - 1;
  for (size_t i = 0; i < names.size(); ++i) {
    LoopVariableReport v;
    v.name = names[i];
    if (i < carried && !untraced_[i].empty()) {
      v.traced = false;
      v.note = untraced_[i];
    } else if (trace_.size() > 0) {
      std::vector<ValueStats> st = trace_.stats(i);
      v.last = st.back();
      v.field = v.last.numel == 1 ? StatField::kMean : StatField::kNorm;
      v.series = trace_.series(i, v.field);
      v.evolution = classify_evolution(v.series, policy_.evolution);
    }
    r.variables.push_back(std::move(v));
  }
  for (int k : condition_.depends_on) r.condition_depends_on.push_back(names[static_cast<size_t>(k)]);
  r.condition = condition_.describe({names.begin(), names.end() - 1});

  if (stopped_by.empty()) {
    // It ended: no prediction needed, the count is known.
    const bool by_trip = trip_count_ && iterations >= *trip_count_;
    r.termination.verdict = TerminationVerdict::kTerminates;
    r.termination.remaining = 0;
    r.termination.exact = true;
    r.termination.bound_by = by_trip ? "trip count" : "condition";
    r.termination.explanation = "ended after " + std::to_string(iterations) + " iterations: " +
                                (by_trip ? "the trip count ran out" : "the condition turned false");
    return r;
  }
  TerminationInput in;
  in.iteration = iterations;
  in.trip_count = trip_count_;
  in.stride = r.stride;
  std::vector<double> series;
  const bool traced = condition_.form && untraced_[static_cast<size_t>(condition_.carried)].empty();
  if (traced) {
    series = trace_.series(static_cast<size_t>(condition_.carried), condition_.field);
    in.condition = condition_.form;
    in.condition_series = series;
    in.carried.push_back({condition_.form->variable, classify_evolution(series, policy_.evolution)});
  }
  r.termination = predict_termination(in, {.evolution = policy_.evolution});
  if (condition_.always_true && !trip_count_) {
    r.termination.verdict = TerminationVerdict::kWillNotTerminate;
    r.termination.explanation = condition_.note + ", and no trip count bounds the loop";
  } else if (!traced && r.termination.verdict == TerminationVerdict::kUnknown && !r.condition_depends_on.empty()) {
    // No form to extrapolate: say what the condition reads and how each of those evolves.
    std::string s = "the condition " + r.condition + ":";
    for (int k : condition_.depends_on) {
      const LoopVariableReport& v = r.variables[static_cast<size_t>(k)];
      s += " " + v.name + " is " + (v.traced ? v.evolution.describe() : "not traced (" + v.note + ")") + ";";
    }
    s.pop_back();
    r.termination.explanation = s;
  }
  return r;
}

}  // namespace sdx::analysis
