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
// (no file of the server is ever read on a model's behalf) and applies every check a file load does.
// Thread-safe; loads run outside the lock, so two clients registering the same new bytes at once may both
// load them, and the first one kept wins.
//
// Memory budget. The loaded sessions live in a ModelCache (model_cache.h; key: the fingerprint), shared
// with the model repository; without one given, an unlimited cache of its own. With a spill folder (sdx
// serve's --model-cache-dir) each upload's bytes are also written there (SHA256HEX.onnx, mode 0600, via
// a temporary name and a rename), so that a model the cache evicted reloads on its next lookup without the
// client uploading it again; the bytes read back are hashed again and must match. Without a folder an
// evicted upload is forgotten (has() false: the client registers it again). The store removes its files
// when it is destroyed.
//
//   serve::ModelStore store(sdx::SessionOptions{}, &cache, "/var/cache/sdx-serve");
//   sdx::Result<std::shared_ptr<const sdx::Session>> s = store.lookup(fp);   // reloads when evicted
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sdx/session.h"
#include "sdx/session_options.h"
#include "sdx/status.h"
#include "serve/model_cache.h"

namespace sdx::serve {

class ModelStore {
 public:
  struct Added {
    std::shared_ptr<const Session> session;  // null when the model is held but evicted (lookup reloads it)
    bool already_held = false;
  };

  // `cache`: the budget shared with the repository (null: unlimited, of its own; it must outlive the store).
  // `spill_dir`: an existing folder only this server writes to (empty: none).
  explicit ModelStore(SessionOptions options, ModelCache* cache = nullptr, std::string spill_dir = "");
  ~ModelStore();
  ModelStore(const ModelStore&) = delete;
  ModelStore& operator=(const ModelStore&) = delete;

  // "sha256:" and the 64 lowercase hex digits of the bytes' SHA-256.
  static std::string fingerprint(std::string_view bytes);

  // Registered: loaded, or evicted with its bytes kept for a reload. Loads nothing, counts no hit.
  bool has(const std::string& fingerprint) const;
  // The loaded model, reloaded from the spill folder when it was evicted. NotFound when not registered
  // (or its kept bytes are gone), ResourceExhausted when it does not fit the budget now.
  Result<std::shared_ptr<const Session>> lookup(const std::string& fingerprint);
  // lookup(), null on any failure.
  std::shared_ptr<const Session> find(const std::string& fingerprint);
  // Loads `bytes` (whose fingerprint the caller computed) unless they are held already. The loader's
  // status, naming the fingerprint, when the bytes are not a model sdx accepts; ResourceExhausted when the
  // model does not fit the budget (nothing is kept of it then).
  Result<Added> add(const std::string& fingerprint, std::string_view bytes);

  // Registered models (loaded or evicted).
  size_t size() const;

 private:
  std::string spill_path(const std::string& fingerprint) const;
  // Writes the bytes to the spill folder.
  Status spill(const std::string& fingerprint, std::string_view bytes) const;
  void forget(const std::string& fingerprint);  // mutex_ held

  SessionOptions options_;
  std::unique_ptr<ModelCache> own_cache_;  // when none was given
  ModelCache* cache_;
  std::string spill_dir_;
  mutable std::mutex mutex_;  // guards spilled_; taken before cache_'s
  std::map<std::string, std::string> spilled_;  // fingerprint -> its file in spill_dir_
};

}  // namespace sdx::serve
