#include "serve/session_manager.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

namespace sdx::serve {

SessionManager::SessionManager(SessionLimits limits, OnEnd on_end, Now now)
    : limits_(limits), on_end_(std::move(on_end)), now_(std::move(now)) {}

SessionManager::~SessionManager() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

std::string SessionManager::new_id() {
  // 128 bits from the OS's generator: ids are not guessable, though a session's refs are checked against
  // the id anyway (ref_store.h). Called under mutex_ (std::random_device is not thread-safe to share).
  static std::random_device device;
  char hex[33];
  for (int i = 0; i < 4; ++i) std::snprintf(hex + 8 * i, 9, "%08x", static_cast<unsigned>(device()));
  return std::string(hex, 32);
}

Result<SessionManager::Lease> SessionManager::open(int64_t lease_ms) {
  if (lease_ms <= 0) lease_ms = limits_.default_lease_ms;
  lease_ms = std::clamp(lease_ms, limits_.min_lease_ms, limits_.max_lease_ms);
  std::lock_guard<std::mutex> lock(mutex_);
  if (sessions_.size() >= limits_.max_sessions)
    return Status(StatusCode::kResourceExhausted,
                  std::to_string(sessions_.size()) + " sessions open, the server's limit; close one or retry later");
  std::string id;
  do id = new_id();
  while (sessions_.count(id));
  sessions_[id] = Entry{lease_ms, now_() + std::chrono::milliseconds(lease_ms)};
  return Lease{id, lease_ms};
}

Result<int64_t> SessionManager::touch(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(id);
  const Clock::time_point now = now_();
  if (it == sessions_.end() || it->second.expires <= now)
    return Status(StatusCode::kNotFound, "session '" + id + "' is not open (unknown, closed, or its lease expired)");
  it->second.expires = now + std::chrono::milliseconds(it->second.lease_ms);
  return it->second.lease_ms;
}

Status SessionManager::close(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.expires <= now_())
      return Status(StatusCode::kNotFound, "session '" + id + "' is not open (unknown, closed, or its lease expired)");
    sessions_.erase(it);
  }
  on_end_(id, SessionEnd::kClosed);
  return Status::ok();
}

size_t SessionManager::reap_expired() {
  std::vector<std::string> expired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = now_();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second.expires <= now) {
        expired.push_back(it->first);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const std::string& id : expired) on_end_(id, SessionEnd::kExpired);
  return expired.size();
}

void SessionManager::start_reaper(std::chrono::milliseconds interval) {
  if (reaper_.joinable()) return;
  reaper_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval, [this] { return stop_; })) {
      lock.unlock();
      reap_expired();
      lock.lock();
    }
  });
}

size_t SessionManager::open_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

}  // namespace sdx::serve
