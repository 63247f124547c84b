#include "analysis/evolution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

namespace sdx::analysis {

const char* evolution_name(Evolution e) {
  switch (e) {
    case Evolution::kInsufficientData: return "INSUFFICIENT_DATA";
    case Evolution::kStable: return "STABLE";
    case Evolution::kConverging: return "CONVERGING";
    case Evolution::kOscillating: return "OSCILLATING";
    case Evolution::kDiverging: return "DIVERGING";
    case Evolution::kChaotic: return "CHAOTIC";
  }
  return "?";
}

namespace {

std::string fmt(const char* f, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// CONVERGING test; fills limit and delta_ratio on success.
bool converges(std::span<const double> x, double tol, const EvolutionOptions& o, EvolutionReport& r) {
  const size_t n = x.size();
  // The moving prefix: deltas above the tolerance. After it every delta must stay within it.
  size_t moving = 0;
  while (moving + 1 < n && std::fabs(x[moving + 1] - x[moving]) > tol) ++moving;
  for (size_t i = moving; i + 1 < n; ++i)
    if (std::fabs(x[i + 1] - x[i]) > tol) return false;
  if (moving == 0) return false;  // nothing moved: STABLE, handled before
  double log_sum = 0;
  int ratios = 0;
  for (size_t i = 0; i + 1 < moving; ++i) {
    const double q = std::fabs(x[i + 2] - x[i + 1]) / std::fabs(x[i + 1] - x[i]);
    if (!(q < 1)) return false;
    log_sum += std::log(q);
    ++ratios;
  }
  const bool settled = moving + 1 < n;  // the tail already sits within the tolerance
  // One moving delta that then settles is a jump to a new value, convergent; without a settled tail one
  // ratio is too little to tell convergence from chance.
  if (!settled && ratios < 2) return false;
  r.delta_ratio = ratios > 0 ? std::exp(log_sum / ratios) : 0;
  if (ratios > 0 && r.delta_ratio > o.converging_max_ratio) return false;
  r.limit = x[n - 1];
  if (!settled && moving >= 2) {
    // Aitken's delta-squared on the last three samples.
    const double a = x[n - 3], b = x[n - 2], c = x[n - 1];
    const double denom = (c - b) - (b - a);
    if (denom != 0 && std::isfinite(denom)) r.limit = c - (c - b) * (c - b) / denom;
  }
  return true;
}

// OSCILLATING test: the smallest period, or 0.
int find_period(std::span<const double> x, double range, const EvolutionOptions& o) {
  const size_t n = x.size();
  const double tol = o.period_tolerance * range;
  for (int p = 2; p <= o.max_period; ++p) {
    if (n < static_cast<size_t>(2 * p)) break;
    bool match = true;
    for (size_t i = 0; i + static_cast<size_t>(p) < n && match; ++i) match = std::fabs(x[i] - x[i + p]) <= tol;
    if (match) return p;
  }
  return 0;
}

}  // namespace

std::string EvolutionReport::describe() const {
  std::string s = evolution_name(kind);
  switch (kind) {
    case Evolution::kConverging: return s + fmt(" to %.9g (delta ratio %.3g per step)", limit, delta_ratio);
    case Evolution::kDiverging:
      return s + (std::isfinite(rate) ? fmt(" (x%.6g per step, mean step %+.6g)", rate, step)
                                      : std::string(" (reached a NaN or an infinity)"));
    case Evolution::kOscillating: return s + " (period " + std::to_string(period) + fmt(", between %.6g and %.6g)", min, max);
    case Evolution::kStable: return s + fmt(" at %.9g", last);
    case Evolution::kChaotic: return s + fmt(" (between %.6g and %.6g, no pattern)", min, max);
    case Evolution::kInsufficientData: return s + " (" + std::to_string(samples) + " samples)";
  }
  return s;
}

EvolutionReport classify_evolution(std::span<const double> series, const EvolutionOptions& o) {
  if (o.window > 0 && series.size() > static_cast<size_t>(o.window)) series = series.last(static_cast<size_t>(o.window));
  EvolutionReport r;
  const size_t n = series.size();
  r.samples = static_cast<int>(n);
  if (n == 0) return r;
  r.last = series[n - 1];
  r.min = *std::min_element(series.begin(), series.end());
  r.max = *std::max_element(series.begin(), series.end());
  for (double v : series) {
    if (!std::isfinite(v)) {
      r.kind = Evolution::kDiverging;
      r.rate = std::numeric_limits<double>::infinity();
      return r;
    }
  }
  if (n < static_cast<size_t>(std::max(o.min_samples, 2))) return r;

  double scale = 1;
  for (double v : series) scale = std::max(scale, std::fabs(v));
  const double tol = o.stable_tolerance * scale;
  bool stable = true;
  for (size_t i = 0; i + 1 < n && stable; ++i) stable = std::fabs(series[i + 1] - series[i]) <= tol;
  if (stable) {
    r.kind = Evolution::kStable;
    return r;
  }
  if (converges(series, tol, o, r)) {
    r.kind = Evolution::kConverging;
    return r;
  }
  r.limit = r.delta_ratio = 0;
  if (int p = find_period(series, r.max - r.min, o)) {
    r.kind = Evolution::kOscillating;
    r.period = p;
    return r;
  }
  size_t growing = 0;
  for (size_t i = 0; i + 1 < n; ++i) growing += std::fabs(series[i + 1]) > std::fabs(series[i]) + tol;
  // An arithmetic progression (a counter, a countdown) is unbounded too, even while |x| still shrinks
  // towards 0: every delta equals the mean delta (to rounding).
  const double mean_step = (series[n - 1] - series[0]) / static_cast<double>(n - 1);
  bool linear = mean_step != 0;
  for (size_t i = 0; i + 1 < n && linear; ++i)
    linear = std::fabs(series[i + 1] - series[i] - mean_step) <= tol + 1e-6 * std::fabs(mean_step);
  if (linear || static_cast<double>(growing) >= o.diverging_fraction * static_cast<double>(n - 1)) {
    r.kind = Evolution::kDiverging;
    // Measured from the first nonzero sample, so a counter starting at 0 has a finite rate.
    size_t j = 0;
    while (j + 1 < n && series[j] == 0) ++j;
    const double first = std::fabs(series[j]), last = std::fabs(series[n - 1]);
    r.rate = j + 1 < n ? std::pow(last / first, 1.0 / static_cast<double>(n - 1 - j))
                       : std::numeric_limits<double>::infinity();
    r.step = (series[n - 1] - series[0]) / static_cast<double>(n - 1);
    return r;
  }
  r.kind = Evolution::kChaotic;
  return r;
}

}  // namespace sdx::analysis
