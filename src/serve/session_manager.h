// Client sessions of the sdx.v1 service (remote_service.h): ids, heartbeat leases and the reaper that ends
// the sessions whose lease ran out.
//
//   serve::SessionManager sessions({}, [&](const std::string& id, serve::SessionEnd why) { refs.drop_session(id); });
//   serve::SessionManager::Lease l = sessions.open(/*lease_ms=*/5000);   // id: 32 random hex digits
//   serve::SessionManager::Lease mine;
//   grpc::Status st = sessions.open(5000, "0f1e2d3c4b5a69788796a5b4c3d2e1f0", &mine);   // the client's id:
//                                         // INVALID_ARGUMENT when malformed, ALREADY_EXISTS when live
//   sessions.touch(l.id);                 // a call naming the session renews its lease; NotFound once ended
//   sessions.close(l.id);                 // on_end(id, kClosed)
//   sessions.start_reaper(std::chrono::milliseconds(100));   // on_end(id, kExpired) for expired leases
//
// A session is alive until it is closed or its lease (lease_ms since its last touch) has passed; an expired
// session is refused at once (touch answers NotFound), even before the reaper gets to it, and on_end runs
// exactly once per session, outside the manager's lock (so it may take other locks, and call back in).
// The clock is injectable: tests drive leases with a fake one and call reap_expired() themselves.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <grpcpp/support/status.h>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "sdx/status.h"

namespace sdx::serve {

enum class SessionEnd { kClosed, kExpired };

// Whether `id` may name a session a client proposes: 16 to 64 characters of [A-Za-z0-9_-] (enough room
// for a random 128-bit id, hex or base64url, and safe as an HTTP/2 header value and in logs). Not OK: a
// message saying what is wrong, without echoing more than the id's first characters.
Status valid_session_id(const std::string& id);

struct SessionLimits {
  int64_t default_lease_ms = 30000;  // a request for lease 0
  int64_t min_lease_ms = 100;
  int64_t max_lease_ms = 600000;
  size_t max_sessions = 100000;  // open sessions at once; beyond: ResourceExhausted
};

class SessionManager {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;
  using OnEnd = std::function<void(const std::string& id, SessionEnd why)>;

  struct Lease {
    std::string id;
    int64_t lease_ms = 0;
  };

  SessionManager(
      SessionLimits limits, OnEnd on_end, Now now = [] { return Clock::now(); });
  ~SessionManager();  // stops the reaper; ends no session (the server is going away)
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // A new session, its lease clamped to the limits. ResourceExhausted at max_sessions.
  Result<Lease> open(int64_t lease_ms);
  // The same with the id the client proposes (empty: one is made): INVALID_ARGUMENT when it is not a valid
  // id (valid_session_id), ALREADY_EXISTS when a session of that id is alive, or ended by its lease but
  // not yet reaped (its refs are being freed); RESOURCE_EXHAUSTED at max_sessions. A closed session's id
  // may be opened again.
  grpc::Status open(int64_t lease_ms, const std::string& proposed_id, Lease* out);
  // Renews the lease; the lease granted. NotFound (naming the id) when unknown, closed or expired.
  Result<int64_t> touch(const std::string& id);
  // Ends the session (on_end(id, kClosed)); NotFound when it is not alive.
  Status close(const std::string& id);

  // Ends every session whose lease has passed (on_end(id, kExpired)); how many.
  size_t reap_expired();
  // Runs reap_expired every `interval` on a thread of its own until destruction.
  void start_reaper(std::chrono::milliseconds interval);

  size_t open_count() const;

 private:
  struct Entry {
    int64_t lease_ms;
    Clock::time_point expires;
  };
  std::string new_id();

  const SessionLimits limits_;
  const OnEnd on_end_;
  const Now now_;
  mutable std::mutex mutex_;  // guards sessions_, stop_
  std::map<std::string, Entry> sessions_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread reaper_;
};

}  // namespace sdx::serve
