#include "serve/ref_store.h"

namespace sdx::serve {

int64_t value_bytes(const Value& value) {
  if (!value.is_tensor()) return 0;
  if (value.element_type() != ElementType::kString) return static_cast<int64_t>(value.nbytes());
  int64_t n = 0;
  for (int64_t i = 0; i < value.element_count(); ++i) n += static_cast<int64_t>(value.string_at(i).size());
  return n;
}

void RefStore::add_session(const std::string& session) {
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_[session];
}

void RefStore::erase(std::map<uint64_t, Ref>::iterator it) {
  live_refs_.fetch_sub(1, std::memory_order_relaxed);
  live_bytes_.fetch_sub(it->second.bytes, std::memory_order_relaxed);
  refs_.erase(it);
}

size_t RefStore::drop_session(const std::string& session) {
  std::vector<Held> freed;  // the values die after the lock is let go (freeing large buffers takes time)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto s = sessions_.find(session);
    if (s == sessions_.end()) return 0;
    for (uint64_t id : s->second) {
      auto it = refs_.find(id);
      if (it == refs_.end()) continue;
      freed.push_back(std::move(it->second.value));
      erase(it);
    }
    sessions_.erase(s);
  }
  return freed.size();
}

Result<uint64_t> RefStore::put(const std::string& session, Value value) {
  const int64_t bytes = value_bytes(value);
  auto held = std::make_shared<const Value>(std::move(value));
  std::lock_guard<std::mutex> lock(mutex_);
  auto s = sessions_.find(session);
  if (s == sessions_.end())
    return Status(StatusCode::kNotFound, "session '" + session + "' ended while its run was going on; output not kept");
  const uint64_t id = next_id_++;
  refs_.emplace(id, Ref{session, std::move(held), bytes});
  s->second.insert(id);
  live_refs_.fetch_add(1, std::memory_order_relaxed);
  live_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return id;
}

grpc::Status RefStore::check(const std::string& session, uint64_t id) const {
  auto it = refs_.find(id);
  if (it == refs_.end())
    return grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        "ref " + std::to_string(id) + " does not exist (never made, released, or freed with its session)");
  if (it->second.session != session)
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        "ref " + std::to_string(id) + " belongs to another session; refs are scoped to the session that made them");
  return grpc::Status::OK;
}

grpc::Status RefStore::get(const std::string& session, uint64_t id, Held* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (grpc::Status st = check(session, id); !st.ok()) return st;
  *out = refs_.at(id).value;
  return grpc::Status::OK;
}

grpc::Status RefStore::release(const std::string& session, const std::vector<uint64_t>& ids, size_t* released) {
  std::vector<Held> freed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (uint64_t id : ids)
      if (grpc::Status st = check(session, id); !st.ok()) return st;
    auto& mine = sessions_[session];
    for (uint64_t id : ids) {
      auto it = refs_.find(id);
      if (it == refs_.end()) continue;  // the same id twice in `ids`
      freed.push_back(std::move(it->second.value));
      erase(it);
      mine.erase(id);
    }
  }
  *released = freed.size();
  return grpc::Status::OK;
}

}  // namespace sdx::serve
