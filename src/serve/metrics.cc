#include "serve/metrics.h"

#include <charconv>
#include <cmath>

namespace sdx::serve {

const std::vector<double> kLatencyBuckets = {1e-6,   2.5e-6, 5e-6,  10e-6, 25e-6, 50e-6, 100e-6, 250e-6,
                                             500e-6, 1e-3,   2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,  100e-3,
                                             250e-3, 500e-3, 1.0,    2.5,  5.0,   10.0};

Metric::Metric(const std::vector<double>* bounds) : bounds_(bounds) {
  if (bounds_) {
    buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_->size() + 1);
    for (size_t i = 0; i <= bounds_->size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
  }
}

void Metric::observe(double seconds) {
  if (!bounds_) return;
  if (!(seconds >= 0)) seconds = 0;  // NaN or a clock step backwards
  size_t i = 0;
  while (i < bounds_->size() && seconds > (*bounds_)[i]) ++i;
  // Relaxed: the bucket and the sum are independent counters; render() derives the count from the buckets.
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(std::llround(seconds * 1e9)), std::memory_order_relaxed);
}

uint64_t Metric::count() const {
  uint64_t n = 0;
  if (bounds_)
    for (size_t i = 0; i <= bounds_->size(); ++i) n += buckets_[i].load(std::memory_order_relaxed);
  return n;
}

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

namespace {

const char* type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"}`, with `extra` (le="...") appended; empty labels and no extra: nothing.
std::string label_text(const MetricLabels& labels, const std::string& extra = "") {
  if (labels.empty() && extra.empty()) return "";
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ',';
    out += k + "=\"" + escape_label_value(v) + "\"";
  }
  if (!extra.empty()) {
    if (out.size() > 1) out += ',';
    out += extra;
  }
  return out + "}";
}

}  // namespace

MetricFamily::MetricFamily(std::string name, std::string help, MetricType type, std::vector<double> bounds)
    : name_(std::move(name)), help_(std::move(help)), type_(type), bounds_(std::move(bounds)) {}

Metric* MetricFamily::child(const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [l, m] : children_)
    if (l == labels) return m.get();
  children_.emplace_back(labels, std::make_unique<Metric>(type_ == MetricType::kHistogram ? &bounds_ : nullptr));
  return children_.back().second.get();
}

void MetricFamily::render(std::string* out) const {
  *out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " " + type_name(type_) + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [labels, m] : children_) {
    if (type_ != MetricType::kHistogram) {
      *out += name_ + label_text(labels) + " " + std::to_string(m->value()) + "\n";
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += m->buckets_[i].load(std::memory_order_relaxed);
      const double le = i < bounds_.size() ? bounds_[i] : INFINITY;
      *out += name_ + "_bucket" + label_text(labels, "le=\"" + format_metric_value(le) + "\"") + " " +
              std::to_string(cumulative) + "\n";
    }
    *out += name_ + "_sum" + label_text(labels) + " " + format_metric_value(m->sum()) + "\n";
    *out += name_ + "_count" + label_text(labels) + " " + std::to_string(cumulative) + "\n";
  }
}

MetricFamily* MetricsRegistry::family(const std::string& name, const std::string& help, MetricType type) {
  std::lock_guard<std::mutex> lock(mutex_);
  families_.push_back(std::make_unique<MetricFamily>(name, help, type, std::vector<double>{}));
  return families_.back().get();
}

MetricFamily* MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                         const std::vector<double>& bounds) {
  std::lock_guard<std::mutex> lock(mutex_);
  families_.push_back(std::make_unique<MetricFamily>(name, help, MetricType::kHistogram, bounds));
  return families_.back().get();
}

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& f : families_) f->render(&out);
  return out;
}

}  // namespace sdx::serve
