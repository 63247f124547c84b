#include "backend/packed_weights.h"

namespace sdx::backend {

std::shared_ptr<PackedWeights> PackedWeights::recording() {
  auto p = std::make_shared<PackedWeights>();
  p->recording_ = true;
  return p;
}

std::shared_ptr<PackedWeights> PackedWeights::from(std::vector<std::pair<std::string, std::string_view>> entries,
                                                   std::shared_ptr<void> owner) {
  auto p = std::make_shared<PackedWeights>();
  for (auto& [key, bytes] : entries) p->found_.emplace(std::move(key), bytes);
  p->owner_ = std::move(owner);
  return p;
}

const void* PackedWeights::find(const std::string& key, size_t bytes) const {
  auto it = found_.find(key);
  const bool hit = it != found_.end() && it->second.size() == bytes;
  std::lock_guard<std::mutex> lock(mu_);
  ++(hit ? hits_ : misses_);
  return hit ? it->second.data() : nullptr;
}

void PackedWeights::keep(const std::string& key, const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!recording_) return;
  kept_.emplace(key, std::string(static_cast<const char*>(data), bytes));
}

std::vector<std::pair<std::string, std::string_view>> PackedWeights::recorded() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, std::string_view>> out;
  for (const auto& [k, v] : kept_) out.emplace_back(k, v);
  return out;
}

std::vector<std::pair<std::string, std::string_view>> PackedWeights::entries() const {
  std::vector<std::pair<std::string, std::string_view>> out(found_.begin(), found_.end());
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [k, v] : kept_)
    if (!found_.count(k)) out.emplace_back(k, v);
  return out;
}

void PackedWeights::stop_recording() {
  std::lock_guard<std::mutex> lock(mu_);
  recording_ = false;
  kept_.clear();
}

size_t PackedWeights::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}
size_t PackedWeights::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace sdx::backend
