#include "serve/model_cache.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace sdx::serve {
namespace {

constexpr int64_t kMinBytes = 4096;      // B's floor (model_cache.h)
constexpr double kMinLoadSeconds = 1e-6;  // C's floor

}  // namespace

struct ModelCache::Entry {
  std::string key, label;
  Handle handle;  // null: not loaded
  int64_t bytes = 0;
  double load_seconds = 0;
  double frequency = 0;         // F as of `stamp`
  Clock::time_point stamp{};    // when `frequency` was last brought up to date
  Clock::time_point last_use{};  // the last access (ties)
  Counts counts;
  // Series of this model (null without metrics), made once: the request path only adds to them.
  Metric *hits = nullptr, *misses = nullptr, *evictions = nullptr, *refusals = nullptr, *bytes_gauge = nullptr;
};

ModelCache::ModelCache(Options options, CacheMetrics* metrics) : options_(std::move(options)), metrics_(metrics) {
  if (options_.budget_bytes < 0) options_.budget_bytes = 0;
  if (!(options_.half_life_seconds > 0)) options_.half_life_seconds = 60.0;
  if (metrics_) metrics_->budget->set(options_.budget_bytes);
}

ModelCache::ModelCache() : ModelCache(Options{}) {}

ModelCache::~ModelCache() = default;

ModelCache::Entry& ModelCache::record(const std::string& key, const std::string& label) {
  std::unique_ptr<Entry>& slot = entries_[key];
  if (!slot) {
    slot = std::make_unique<Entry>();
    slot->key = key;
    slot->label = label;
    slot->stamp = now();
    if (metrics_) {
      const MetricLabels labels = {{"model", label}};
      slot->hits = metrics_->hits->child(labels);
      slot->misses = metrics_->misses->child(labels);
      slot->evictions = metrics_->evictions->child(labels);
      slot->refusals = metrics_->refusals->child(labels);
      slot->bytes_gauge = metrics_->model_bytes->child(labels);
    }
  }
  return *slot;
}

double ModelCache::value_of(const Entry& e, Clock::time_point t) const {
  const double age = std::max(0.0, std::chrono::duration<double>(t - e.stamp).count());
  const double f = e.frequency * std::exp2(-age / options_.half_life_seconds);
  return f * std::max(e.load_seconds, kMinLoadSeconds) / static_cast<double>(std::max(e.bytes, kMinBytes));
}

void ModelCache::access(Entry& e, Clock::time_point t) const {
  const double age = std::max(0.0, std::chrono::duration<double>(t - e.stamp).count());
  e.frequency = e.frequency * std::exp2(-age / options_.half_life_seconds) + 1.0;
  e.stamp = std::max(e.stamp, t);
  e.last_use = std::max(e.last_use, t);
}

void ModelCache::evict(Entry& e, std::vector<Handle>* released) {
  held_ -= e.bytes;
  released->push_back(std::move(e.handle));
  e.handle = nullptr;
  ++e.counts.evictions;
  if (e.evictions) {
    e.evictions->add(1);
    e.bytes_gauge->set(0);
  }
}

ModelCache::Handle ModelCache::acquire(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second->handle) return nullptr;
  Entry& e = *it->second;
  access(e, now());
  ++e.counts.hits;
  if (e.hits) e.hits->add(1);
  return e.handle;
}

ModelCache::Handle ModelCache::peek(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second->handle;
}

Result<ModelCache::Handle> ModelCache::admit(const std::string& key, const std::string& description,
                                             const std::string& label, Load load, Admit how,
                                             std::vector<Handle>* released) {
  std::vector<Handle> local;  // released here when the caller gave no vector: after the unlock
  if (!released) released = &local;
  std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point t = now();
  Entry& e = record(key, label);
  if (e.handle && how != Admit::kReplace) {  // another thread loaded it meanwhile: keep that one
    released->push_back(std::move(load.handle));
    return e.handle;
  }
  const int64_t bytes = std::max<int64_t>(load.bytes, 0);
  const int64_t replaced = e.handle ? e.bytes : 0;  // kReplace: the copy it replaces goes
  const int64_t budget = options_.budget_bytes;
  if (budget > 0 && held_ - replaced + bytes > budget) {
    // What could go: idle models other than this one, lowest value first.
    std::vector<Entry*> idle;
    int64_t idle_bytes = 0, busy_bytes = 0;
    for (auto& [k, other] : entries_) {
      if (!other->handle || other.get() == &e) continue;
      if (other->handle.use_count() > 1) {
        busy_bytes += other->bytes;
      } else {
        idle.push_back(other.get());
        idle_bytes += other->bytes;
      }
    }
    if (bytes > budget || held_ - replaced - idle_bytes + bytes > budget) {
      ++e.counts.refusals;
      if (e.refusals) e.refusals->add(1);
      released->push_back(std::move(load.handle));
      std::string why = bytes > budget
                            ? "more than the whole memory budget of " + std::to_string(budget) + " bytes"
                            : "the memory budget is " + std::to_string(budget) + " bytes and models running " +
                                  "requests hold " + std::to_string(busy_bytes) +
                                  " of them (they cannot be evicted now; retry)";
      return Status(StatusCode::kResourceExhausted,
                    description + " needs " + std::to_string(bytes) + " bytes: " + why + " (--memory-budget)");
    }
    std::sort(idle.begin(), idle.end(), [&](const Entry* a, const Entry* b) {
      return std::make_tuple(value_of(*a, t), a->last_use, a->key) < std::make_tuple(value_of(*b, t), b->last_use, b->key);
    });
    for (Entry* victim : idle) {
      if (held_ - replaced + bytes <= budget) break;
      evict(*victim, released);
    }
  }
  if (e.handle) released->push_back(std::move(e.handle));  // kReplace
  held_ += bytes - replaced;
  e.handle = std::move(load.handle);
  e.bytes = bytes;
  e.load_seconds = load.load_seconds;
  e.last_use = std::max(e.last_use, t);  // ties: the model loaded or used longest ago goes first
  if (how == Admit::kOnDemand) {
    access(e, t);
    ++e.counts.misses;
    if (e.misses) e.misses->add(1);
  }
  if (e.bytes_gauge) e.bytes_gauge->set(bytes);
  if (metrics_) metrics_->bytes->set(held_);
  return e.handle;
}

ModelCache::Handle ModelCache::erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  Handle h = std::move(it->second->handle);
  if (h) {
    held_ -= it->second->bytes;
    if (it->second->bytes_gauge) it->second->bytes_gauge->set(0);
    if (metrics_) metrics_->bytes->set(held_);
  }
  entries_.erase(it);  // the metric series stay (the registry keeps them); a later admit finds them again
  return h;
}

int64_t ModelCache::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

double ModelCache::value(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() || !it->second->handle ? 0.0 : value_of(*it->second, now());
}

std::vector<std::string> ModelCache::resident_keys() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> keys;
  for (const auto& [k, e] : entries_)
    if (e->handle) keys.push_back(k);
  return keys;
}

ModelCache::Counts ModelCache::counts(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? Counts{} : it->second->counts;
}

}  // namespace sdx::serve
