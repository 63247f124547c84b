// Models uploaded to the sdx.v1 service, keyed by the SHA-256 of their bytes (the fingerprint).
//
//   serve::ModelStore store(sdx::SessionOptions{});
//   std::string fp = serve::ModelStore::fingerprint(bytes);       // "sha256:" + 64 hex digits
//   if (!store.has(fp)) {
//     sdx::Result<serve::ModelStore::Added> a = store.add(fp, bytes);   // loads; the usual loader checks
//   }
//   std::shared_ptr<const sdx::Session> s = store.find(fp);         // null: not registered
//
// Why SHA-256 and not the XXH3-128 of core/xxh3_digest.h: the fingerprint is a name that several clients
// share (a client that finds F registered runs the model under F without uploading it). With a hash that
// is not collision-resistant, one client could upload a model made to collide with another's and have
// that one run it; SHA-256 rules that out. Its cost (OpenSSL's one-time start, ~1 ms; then about 1 GB/s)
// is small beside loading the model.
//
// Uploaded bytes are untrusted: they load through sdx::Session::load_bytes, which refuses external data
// (no file of the server is ever read on a model's behalf) and applies every check a file load does. Models
// stay until the server stops (no memory budget or eviction yet). Thread-safe; loads run outside the lock,
// so two clients registering the same new bytes at once may both load them, and the first one kept wins.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "sdx/session.h"
#include "sdx/session_options.h"
#include "sdx/status.h"

namespace sdx::serve {

class ModelStore {
 public:
  struct Added {
    std::shared_ptr<const Session> session;
    bool already_held = false;
  };

  explicit ModelStore(SessionOptions options) : options_(std::move(options)) {}

  // "sha256:" and the 64 lowercase hex digits of the bytes' SHA-256.
  static std::string fingerprint(std::string_view bytes);

  bool has(const std::string& fingerprint) const { return find(fingerprint) != nullptr; }
  std::shared_ptr<const Session> find(const std::string& fingerprint) const;
  // Loads `bytes` (whose fingerprint the caller computed) unless they are held already. The loader's
  // status, naming the fingerprint, when the bytes are not a model sdx accepts.
  Result<Added> add(const std::string& fingerprint, std::string_view bytes);

  size_t size() const;

 private:
  SessionOptions options_;
  mutable std::mutex mutex_;  // guards models_
  std::map<std::string, std::shared_ptr<const Session>> models_;
};

}  // namespace sdx::serve
