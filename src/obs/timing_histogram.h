// TimingHistogram: a 24-bucket logarithmic histogram of durations, the percentile source of
// OpTimingTracker (p50/p90/p99 per op).
//
// Bucket 0 holds durations below 128 ns; bucket b (1..22) holds [64 * 2^b, 64 * 2^(b+1)) ns; bucket 23
// holds everything from 64 * 2^23 ns (about 0.54 s) up. Percentiles interpolate linearly inside the
// bucket that holds the rank, clamped to the observed min and max, so they are exact to the bucket's
// width (a factor of 2) and never outside what was seen.
//
//   TimingHistogram h;  h.add(1500);  h.add(90'000);
//   double p90_ns = h.percentile(0.90, min_ns, max_ns);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace sdx::obs {

class TimingHistogram {
 public:
  static constexpr int kBuckets = 24;

  // The bucket of a duration in ns.
  static int bucket_of(uint64_t ns) {
    if (ns < 128) return 0;
    const int b = 63 - __builtin_clzll(ns) - 6;  // floor(log2(ns / 64))
    return b >= kBuckets ? kBuckets - 1 : b;
  }
  // Lower edge of bucket b in ns (0 for bucket 0).
  static double lower_edge(int b) { return b == 0 ? 0.0 : 64.0 * static_cast<double>(uint64_t{1} << b); }
  // Upper edge of bucket b in ns (the last bucket has none: +inf is reported as its lower edge * 2).
  static double upper_edge(int b) { return 64.0 * static_cast<double>(uint64_t{1} << (b + 1)); }

  void add(uint64_t ns) {
    ++counts_[static_cast<size_t>(bucket_of(ns))];
    ++total_;
  }
  void merge(const TimingHistogram& o) {
    for (int b = 0; b < kBuckets; ++b) counts_[static_cast<size_t>(b)] += o.counts_[static_cast<size_t>(b)];
    total_ += o.total_;
  }
  uint64_t count(int b) const { return counts_[static_cast<size_t>(b)]; }
  uint64_t total() const { return total_; }

  // The q-quantile (0 < q <= 1) in ns, within [min_ns, max_ns]; 0 when empty.
  double percentile(double q, double min_ns, double max_ns) const {
    if (total_ == 0) return 0.0;
    const double rank = q * static_cast<double>(total_);
    double seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      const auto c = static_cast<double>(counts_[static_cast<size_t>(b)]);
      if (c == 0) continue;
      if (seen + c >= rank) {
        double lo = lower_edge(b), hi = upper_edge(b);
        if (lo < min_ns) lo = min_ns;
        if (hi > max_ns) hi = max_ns;
        if (hi < lo) hi = lo;
        return lo + (hi - lo) * ((rank - seen) / c);
      }
      seen += c;
    }
    return max_ns;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

}  // namespace sdx::obs
