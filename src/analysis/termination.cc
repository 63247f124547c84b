#include "analysis/termination.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

namespace sdx::analysis {

const char* comparison_symbol(Comparison c) {
  switch (c) {
    case Comparison::kLess: return "<";
    case Comparison::kLessEqual: return "<=";
    case Comparison::kGreater: return ">";
    case Comparison::kGreaterEqual: return ">=";
    case Comparison::kNotEqual: return "!=";
  }
  return "?";
}

const char* termination_verdict_name(TerminationVerdict v) {
  switch (v) {
    case TerminationVerdict::kTerminates: return "TERMINATES";
    case TerminationVerdict::kWillNotTerminate: return "WILL_NOT_TERMINATE";
    case TerminationVerdict::kUnknown: return "UNKNOWN";
  }
  return "?";
}

bool ConditionForm::holds(double v) const {
  switch (op) {
    case Comparison::kLess: return v < threshold;
    case Comparison::kLessEqual: return v <= threshold;
    case Comparison::kGreater: return v > threshold;
    case Comparison::kGreaterEqual: return v >= threshold;
    case Comparison::kNotEqual: return v != threshold;
  }
  return false;
}

std::string ConditionForm::describe() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", threshold);
  return variable + " " + comparison_symbol(op) + " " + buf;
}

std::string TerminationReport::describe() const {
  std::string s = termination_verdict_name(verdict);
  if (remaining) s += std::string(": ") + (exact ? "" : "about ") + std::to_string(*remaining) + " more iterations (" + bound_by + ")";
  if (!explanation.empty()) s += (remaining ? "; " : ": ") + explanation;
  return s;
}

namespace {

// The first sample k >= 0 ahead whose extrapolated value fails the condition, or nullopt when none does
// (within max_samples, or ever). Sample 0 is the current value.
struct Extrapolation {
  bool known = false;               // false: the evolution allows no prediction
  std::optional<int64_t> first_false;
};

Extrapolation extrapolate(std::span<const double> x, const EvolutionReport& e, const ConditionForm& c,
                          int64_t max_samples, int64_t simulate_limit) {
  const size_t n = x.size();
  const double v = x[n - 1];
  if (!c.holds(v)) return {true, 0};
  switch (e.kind) {
    case Evolution::kStable: return {true, std::nullopt};
    case Evolution::kOscillating: {
      const int64_t p = e.period;
      if (n < static_cast<size_t>(p) + 1) return {};
      // x_k repeats the last period: x_k = x[n-1-p + ((k-1) mod p) + 1].
      for (int64_t k = 1; k <= p; ++k)
        if (!c.holds(x[n - 1 - static_cast<size_t>(p) + static_cast<size_t>((k - 1) % p) + 1])) return {true, k};
      return {true, std::nullopt};
    }
    case Evolution::kConverging:
    case Evolution::kDiverging: break;
    case Evolution::kChaotic:
    case Evolution::kInsufficientData: return {};
  }
  if (n < 3) return {};
  const double d0 = x[n - 2] - x[n - 3], d1 = x[n - 1] - x[n - 2];
  if (d1 == 0) return {true, std::nullopt};  // it stopped moving
  if (d0 == 0) return {};
  const double a = d1 / d0;
  std::function<double(int64_t)> at;
  if (std::fabs(a - 1) <= 1e-9) {
    at = [=](int64_t k) { return v + static_cast<double>(k) * d1; };
  } else {
    const double limit = (x[n - 1] - a * x[n - 2]) / (1 - a);  // the fixed point of x' = a x + b
    at = [=](int64_t k) { return limit + (v - limit) * std::pow(a, static_cast<double>(k)); };
    if (a > 0 && a < 1 && c.holds(limit)) return {true, std::nullopt};  // converges inside the condition
  }
  if (a > 0 && c.op != Comparison::kNotEqual) {
    // x_k is monotone in k and the comparison monotone in x: the condition fails from some k on, if ever.
    if (c.holds(at(max_samples))) return {true, std::nullopt};
    int64_t lo = 0, hi = max_samples;  // holds at lo, fails at hi
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (c.holds(at(mid)) ? lo : hi) = mid;
    }
    return {true, hi};
  }
  for (int64_t k = 1; k <= std::min(max_samples, simulate_limit); ++k)
    if (!c.holds(at(k))) return {true, k};
  return {true, std::nullopt};
}

}  // namespace

TerminationReport predict_termination(const TerminationInput& in, const TerminationOptions& o) {
  TerminationReport r;
  std::optional<int64_t> by_trip;
  if (in.trip_count) by_trip = std::max<int64_t>(0, *in.trip_count - in.iteration);

  std::optional<int64_t> by_cond;
  bool cond_never = false;
  std::string cond_text;
  if (in.condition && !in.condition_series.empty()) {
    const ConditionForm& c = *in.condition;
    NamedEvolution ev{c.variable, {}};
    auto listed = std::find_if(in.carried.begin(), in.carried.end(),
                               [&](const NamedEvolution& n) { return n.name == c.variable; });
    ev.evolution = listed != in.carried.end() ? listed->evolution : classify_evolution(in.condition_series, o.evolution);
    const int64_t stride = std::max<int64_t>(in.stride, 1);
    const Extrapolation x =
        extrapolate(in.condition_series, ev.evolution, c, std::max<int64_t>(o.horizon / stride, 1), o.simulate_limit);
    cond_text = "`" + c.describe() + "`";
    if (x.known && x.first_false) {
      by_cond = *x.first_false * stride;
      cond_text += " turns false in about " + std::to_string(*by_cond) + " iterations: " + c.variable + " is " +
                   ev.evolution.describe();
    } else if (x.known) {
      cond_never = true;
      cond_text += " stays true: " + c.variable + " is " + ev.evolution.describe();
      r.root_cause = ev;
    } else {
      cond_text += " cannot be extrapolated: " + c.variable + " is " + ev.evolution.describe();
    }
  }

  if (by_trip && (!by_cond || *by_trip <= *by_cond)) {
    r.verdict = TerminationVerdict::kTerminates;
    r.remaining = by_trip;
    r.exact = true;
    r.bound_by = "trip count";
    r.explanation = "the trip count " + std::to_string(*in.trip_count) + " bounds it";
    if (!cond_text.empty()) r.explanation += "; " + cond_text;
  } else if (by_cond) {
    r.verdict = TerminationVerdict::kTerminates;
    r.remaining = by_cond;
    r.bound_by = "condition";
    r.explanation = cond_text;
  } else if (cond_never) {
    r.verdict = TerminationVerdict::kWillNotTerminate;
    r.explanation = cond_text + ", and no trip count bounds the loop";
  } else {
    r.explanation = cond_text.empty() ? "no trip count and no condition series to extrapolate" : cond_text;
  }
  return r;
}

}  // namespace sdx::analysis
