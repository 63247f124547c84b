// Remote references of the sdx.v1 service: values a run kept on the server, by id, each owned by one
// client session (session_manager.h).
//
//   serve::RefStore refs;
//   refs.add_session("s1");
//   Result<uint64_t> id = refs.put("s1", std::move(value));          // NotFound once s1 was dropped
//   RefStore::Held v;
//   grpc::Status st = refs.get("s1", id.value(), &v);                 // the value, shared, no copy
//   refs.get("s2", id.value(), &v);      // PERMISSION_DENIED: another session's ref (NOT_FOUND: no such ref)
//   refs.release("s1", {id.value()}, &n);   // all or nothing
//   refs.drop_session("s1");             // frees every ref of s1; later puts for s1 are refused
//
// Values are shared (std::shared_ptr<const Value>): a run that took a ref as input keeps it alive while it
// runs even if the ref is released meanwhile, and the bytes are freed when the last holder lets go. A put
// for a session that is gone (closed or expired while its run was going on) is refused, so nothing outlives
// its session. Ids are unique for the store's life (a counter), never reused. Thread-safe; the counts are
// kept under the mutex and read without it (relaxed: figures for the metrics, publishing nothing).
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sdx/status.h"
#include "sdx/tensor.h"

namespace sdx::serve {

class RefStore {
 public:
  using Held = std::shared_ptr<const Value>;

  // Registers a session (idempotent).
  void add_session(const std::string& session);
  // Frees the session's refs and forgets the session; how many refs were freed.
  size_t drop_session(const std::string& session);

  // Keeps `value` for the session; its new id. NotFound when the session is not registered.
  Result<uint64_t> put(const std::string& session, Value value);
  // NOT_FOUND: no such ref (never made, released, or freed with its session); PERMISSION_DENIED: the ref
  // belongs to another session. (gRPC codes: sdx::StatusCode has no permission code.)
  grpc::Status get(const std::string& session, uint64_t id, Held* out) const;
  // Releases the refs, all of them or (on the first unknown or foreign id) none; `released`: how many.
  grpc::Status release(const std::string& session, const std::vector<uint64_t>& ids, size_t* released);

  int64_t live_refs() const { return live_refs_.load(std::memory_order_relaxed); }
  int64_t live_bytes() const { return live_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Ref {
    std::string session;
    Held value;
    int64_t bytes;
  };
  grpc::Status check(const std::string& session, uint64_t id) const;  // under mutex_
  void erase(std::map<uint64_t, Ref>::iterator it);                   // under mutex_

  mutable std::mutex mutex_;  // guards refs_, sessions_, next_id_
  std::map<uint64_t, Ref> refs_;
  std::map<std::string, std::set<uint64_t>> sessions_;  // session -> its refs
  uint64_t next_id_ = 1;
  std::atomic<int64_t> live_refs_{0}, live_bytes_{0};
};

// The bytes a value holds (tensor data; strings: their characters), as the metrics count them.
int64_t value_bytes(const Value& value);

}  // namespace sdx::serve
