// Evolution: how one loop-carried variable changes across iterations, from the series of one of its
// statistics (analysis/loop_trace.h), oldest first. Pure arithmetic on the series: no graph, no tensors.
//
//   analysis::EvolutionReport e = analysis::classify_evolution(trace.series(0, analysis::StatField::kMean));
//   if (e.kind == analysis::Evolution::kConverging) use(e.limit);
//   std::string line = e.describe();   // "CONVERGING to 1.41421 (delta ratio 0.0009)"
//
// The classes, tested in this order on the last `window` samples (d_i = x_{i+1} - x_i, scale = max(1, max|x|)):
//   STABLE       every |d_i| <= stable_tolerance * scale.
//   CONVERGING   the deltas above that tolerance are a prefix (once a delta falls within it, none grows
//                back) and shrink: each |d_{i+1}| / |d_i| < 1 and their geometric mean <= converging_max_ratio.
//                The limit is Aitken's delta-squared extrapolation of the last three moving samples
//                (the last value when the series has already settled).
//   OSCILLATING  the smallest period p in [2, max_period] with |x_i - x_{i+p}| <= period_tolerance * (max - min)
//                for every i, seen over at least two full periods.
//   DIVERGING    |x| grows on at least diverging_fraction of the steps, or x moves by the same nonzero step
//                every sample (an arithmetic progression: a countdown is unbounded too, though |x| first
//                shrinks); rate is the mean growth factor of |x| per sample, (|x_last| / |x_first|)^(1/(n-1)),
//                and step the mean delta. A series reaching a NaN or an infinity is DIVERGING with an
//                infinite rate.
//   CHAOTIC      none of these (bounded or not, with no settled pattern: e.g. the logistic map at r = 3.9).
// Fewer than min_samples samples give INSUFFICIENT_DATA.
#pragma once

#include <span>
#include <string>

namespace sdx::analysis {

enum class Evolution { kInsufficientData, kStable, kConverging, kOscillating, kDiverging, kChaotic };
// "STABLE", "CONVERGING", ... (the names in the issue and the reports).
const char* evolution_name(Evolution e);

// The thresholds of classify_evolution, all in one place (the defaults are the documented ones).
struct EvolutionOptions {
  int min_samples = 6;                  // fewer samples: INSUFFICIENT_DATA
  int window = 64;                      // classify the last `window` samples; 0 = all
  double stable_tolerance = 1e-9;       // a delta within this x scale counts as no change
  double converging_max_ratio = 0.99;   // geometric mean of |d_{i+1}|/|d_i| at most this to converge
  int max_period = 16;                  // longest period searched
  double period_tolerance = 1e-6;       // x_i and x_{i+p} match within this x the window's range
  double diverging_fraction = 0.9;      // share of steps on which |x| must grow to diverge
};

struct EvolutionReport {
  Evolution kind = Evolution::kInsufficientData;
  int samples = 0;           // samples classified (after the window)
  double last = 0;           // the latest value
  double limit = 0;          // CONVERGING: the estimated limit
  double delta_ratio = 0;    // CONVERGING: geometric mean of |d_{i+1}| / |d_i| (the contraction per sample)
  double rate = 0;           // DIVERGING: growth factor of |x| per sample (infinite when it overflowed)
  double step = 0;           // DIVERGING: mean delta per sample
  int period = 0;            // OSCILLATING: the period in samples
  double min = 0, max = 0;   // the window's range
  // One line: "DIVERGING (x1.1 per step, mean step +12.5)".
  std::string describe() const;
};

EvolutionReport classify_evolution(std::span<const double> series, const EvolutionOptions& options = {});

}  // namespace sdx::analysis
