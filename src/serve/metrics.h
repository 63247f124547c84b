// Prometheus metrics for sdx-serve: counters, gauges and fixed-bucket histograms, rendered in the
// Prometheus text exposition format (version 0.0.4) for GET /metrics.
//
//   serve::MetricsRegistry registry;
//   serve::MetricFamily* requests = registry.family("sdx_requests_total", "Requests.", MetricType::kCounter);
//   serve::Metric* ok = requests->child({{"model", "add"}, {"status", "OK"}});   // created once, kept
//   ok->add(1);                                                                   // the request path
//   serve::MetricFamily* latency = registry.histogram("sdx_request_duration_seconds", "...", kLatencyBuckets);
//   latency->child({{"model", "add"}})->observe(12e-6);
//   std::string text = registry.render();                                        // the /metrics body
//
// The request path only touches atomics (relaxed adds: each counter publishes nothing but its own value,
// and a scrape reading one a little stale is fine). Families and children are created under a mutex and
// never destroyed while the registry lives, so the pointers handed out stay valid; a scrape takes the same
// mutex only to walk the lists. A histogram's count and +Inf bucket are rendered from the same bucket
// reads, so a scrape is self-consistent even while requests observe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sdx::serve {

enum class MetricType { kCounter, kGauge, kHistogram };

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Bucket upper bounds (seconds) for request latencies: 1 us to 10 s, 1-2.5-5 per decade.
extern const std::vector<double> kLatencyBuckets;

// One labelled time series: a counter or gauge value, or a histogram's buckets.
class Metric {
 public:
  explicit Metric(const std::vector<double>* bounds);

  // Counter: add a non-negative amount. Gauge: add any amount (a decrement is a negative add).
  void add(int64_t delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  void set(int64_t value) { value_.store(value, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

  // Histogram: one observation, in seconds.
  void observe(double seconds);
  // Histogram: observations so far and their sum (seconds); a snapshot, for retry hints.
  uint64_t count() const;
  double sum() const { return static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9; }

 private:
  friend class MetricFamily;
  std::atomic<int64_t> value_{0};
  const std::vector<double>* bounds_;                  // null for a counter or gauge
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;   // one per bound, then +Inf (non-cumulative)
  std::atomic<uint64_t> sum_ns_{0};                    // the sum in nanoseconds: integral, so lock-free
};

class MetricFamily {
 public:
  MetricFamily(std::string name, std::string help, MetricType type, std::vector<double> bounds);

  // The series with these labels, created on first use (label values are escaped when rendered).
  Metric* child(const MetricLabels& labels);

  void render(std::string* out) const;

 private:
  std::string name_, help_;
  MetricType type_;
  std::vector<double> bounds_;
  mutable std::mutex mutex_;  // guards children_ (the list, not the values)
  std::deque<std::pair<MetricLabels, std::unique_ptr<Metric>>> children_;
};

class MetricsRegistry {
 public:
  MetricFamily* family(const std::string& name, const std::string& help, MetricType type);
  MetricFamily* histogram(const std::string& name, const std::string& help, const std::vector<double>& bounds);

  // Every family, in registration order, as Prometheus text.
  std::string render() const;

 private:
  mutable std::mutex mutex_;  // guards families_
  std::deque<std::unique_ptr<MetricFamily>> families_;
};

// A label value as the text format writes it: backslash, double quote and newline escaped.
std::string escape_label_value(const std::string& value);

// A float as the text format writes it: shortest round-trip form, "+Inf" for infinity.
std::string format_metric_value(double value);

}  // namespace sdx::serve
