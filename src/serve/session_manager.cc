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

Status valid_session_id(const std::string& id) {
  constexpr size_t kMin = 16, kMax = 64;
  auto shown = [&] {  // at most 24 characters, the others as '?': the id is untrusted
    std::string out;
    for (char c : id.substr(0, 24)) out += (c > ' ' && c < 127 && c != '\'' && c != '\\') ? c : '?';
    return "'" + out + (id.size() > 24 ? "...'" : "'");
  };
  const std::string rule = "; a session id is 16 to 64 characters of [A-Za-z0-9_-]";
  if (id.size() < kMin || id.size() > kMax)
    return Status(StatusCode::kInvalidArgument,
                  "session id " + shown() + ": " + std::to_string(id.size()) + " characters" + rule);
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok)
      return Status(StatusCode::kInvalidArgument,
                    "session id " + shown() + ": character " + std::to_string(i) + " is not allowed" + rule);
  }
  return Status::ok();
}

Result<SessionManager::Lease> SessionManager::open(int64_t lease_ms) {
  Lease lease;
  grpc::Status st = open(lease_ms, "", &lease);
  if (!st.ok()) return Status(StatusCode::kResourceExhausted, st.error_message());  // the only refusal without an id
  return lease;
}

grpc::Status SessionManager::open(int64_t lease_ms, const std::string& proposed_id, Lease* out) {
  if (!proposed_id.empty())
    if (Status st = valid_session_id(proposed_id); !st.is_ok())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, st.message());
  if (lease_ms <= 0) lease_ms = limits_.default_lease_ms;
  lease_ms = std::clamp(lease_ms, limits_.min_lease_ms, limits_.max_lease_ms);
  std::lock_guard<std::mutex> lock(mutex_);
  if (sessions_.size() >= limits_.max_sessions)
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        std::to_string(sessions_.size()) +
                            " sessions open, the server's limit; close one or retry later");
  std::string id = proposed_id;
  if (id.empty()) {
    do id = new_id();
    while (sessions_.count(id));
  } else if (sessions_.count(id)) {
    return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                        "session '" + id + "' is already open on this server; propose another id (a random one)");
  }
  sessions_[id] = Entry{lease_ms, now_() + std::chrono::milliseconds(lease_ms)};
  *out = Lease{id, lease_ms};
  return grpc::Status::OK;
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
