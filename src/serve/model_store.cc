#include "serve/model_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sdx::serve {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The whole file, or an IoError naming it.
Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status(StatusCode::kIoError, path + ": cannot be read");
  return text.str();
}

}  // namespace

ModelStore::ModelStore(SessionOptions options, ModelCache* cache, std::string spill_dir)
    : options_(std::move(options)),
      own_cache_(cache ? nullptr : std::make_unique<ModelCache>()),
      cache_(cache ? cache : own_cache_.get()),
      spill_dir_(std::move(spill_dir)) {}

ModelStore::~ModelStore() {
  for (const auto& [fp, path] : spilled_) std::remove(path.c_str());
  for (const std::string& key : cache_->resident_keys())  // the cache may outlive the store
    if (key.rfind("sha256:", 0) == 0) cache_->erase(key);
}

std::string ModelStore::fingerprint(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_sha256(), nullptr) != 1 || n != 32)
    throw std::runtime_error("SHA-256 failed (libcrypto)");
  static const char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string ModelStore::spill_path(const std::string& fingerprint) const {
  // fingerprint() made it: "sha256:" and 64 hex digits, so the name stays inside the folder.
  return spill_dir_ + "/" + fingerprint.substr(7) + ".onnx";
}

Status ModelStore::spill(const std::string& fingerprint, std::string_view bytes) const {
  static std::atomic<uint64_t> counter{0};  // a unique temporary name per write (relaxed: names only)
  const std::string path = spill_path(fingerprint);
  const std::string tmp = path + ".part" + std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return Status(StatusCode::kIoError, "cannot keep uploaded model " + fingerprint + " in " + spill_dir_ +
                                            " (--model-cache-dir): " + std::strerror(errno));
  size_t done = 0;
  int err = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    return Status(StatusCode::kIoError, "cannot keep uploaded model " + fingerprint + " in " + spill_dir_ +
                                            " (--model-cache-dir): " + std::strerror(err));
  }
  return Status::ok();
}

void ModelStore::forget(const std::string& fingerprint) {
  auto it = spilled_.find(fingerprint);
  if (it == spilled_.end()) return;
  std::remove(it->second.c_str());
  spilled_.erase(it);
}

bool ModelStore::has(const std::string& fingerprint) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spilled_.count(fingerprint) || cache_->resident(fingerprint);
}

size_t ModelStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = spilled_.size();
  for (const std::string& key : cache_->resident_keys())  // resident uploads without a spilled copy
    if (key.rfind("sha256:", 0) == 0 && !spilled_.count(key)) ++n;
  return n;
}

std::shared_ptr<const Session> ModelStore::find(const std::string& fingerprint) {
  Result<std::shared_ptr<const Session>> found = lookup(fingerprint);
  return found.is_ok() ? found.value() : nullptr;
}

Result<std::shared_ptr<const Session>> ModelStore::lookup(const std::string& fingerprint) {
  const Status not_registered(StatusCode::kNotFound,
                              "model " + fingerprint + " is not registered (HasModel, then RegisterModel)");
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ModelCache::Handle held = cache_->acquire(fingerprint)) return std::static_pointer_cast<const Session>(held);
    auto it = spilled_.find(fingerprint);
    if (it == spilled_.end()) return not_registered;
    path = it->second;
  }
  // Evicted: reload the kept bytes, outside the lock. They are hashed again: a file that changed is not
  // the model the fingerprint names.
  const auto started = std::chrono::steady_clock::now();
  Result<std::string> bytes = read_file(path);
  Status failure = bytes.status();
  std::shared_ptr<const Session> session;
  if (failure.is_ok() && ModelStore::fingerprint(bytes.value()) != fingerprint)
    failure = Status(StatusCode::kDataLoss, "the kept copy " + path + " no longer hashes to it");
  if (failure.is_ok()) {
    Result<Session> loaded = Session::load_bytes(bytes.value(), options_);
    if (loaded.is_ok()) session = std::make_shared<const Session>(std::move(loaded).value());
    else failure = loaded.status();
  }
  std::vector<ModelCache::Handle> released;  // destroyed after the unlock
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure.is_ok()) {
    forget(fingerprint);  // the client registers it again
    return Status(StatusCode::kNotFound, "model " + fingerprint + " was evicted and its kept bytes could not be " +
                                             "reloaded (" + failure.message() + "); register it again");
  }
  if (!spilled_.count(fingerprint)) return not_registered;  // forgotten meanwhile
  Result<ModelCache::Handle> admitted =
      cache_->admit(fingerprint, "uploaded model " + fingerprint, fingerprint,
                    {session, session->weight_bytes(), seconds_since(started)}, ModelCache::Admit::kOnDemand,
                    &released);
  if (!admitted.is_ok()) return admitted.status();  // still registered: a later run may fit
  return std::static_pointer_cast<const Session>(admitted.value());
}

Result<ModelStore::Added> ModelStore::add(const std::string& fingerprint, std::string_view bytes) {
  {
    // Held: one lookup, no load (an evicted model reloads when a run needs it).
    std::lock_guard<std::mutex> lock(mutex_);
    ModelCache::Handle held = cache_->peek(fingerprint);
    if (held || spilled_.count(fingerprint)) return Added{std::static_pointer_cast<const Session>(held), true};
  }
  const auto started = std::chrono::steady_clock::now();
  Result<Session> loaded = Session::load_bytes(bytes, options_);
  if (!loaded.is_ok()) return loaded.status().with_context("uploaded model " + fingerprint);
  auto session = std::make_shared<const Session>(std::move(loaded).value());
  const double seconds = seconds_since(started);
  const bool keep_bytes = !spill_dir_.empty() && cache_->budget_bytes() > 0;
  if (keep_bytes) {
    if (Status st = spill(fingerprint, bytes); !st.is_ok()) return st;
  }
  std::vector<ModelCache::Handle> released;  // destroyed after the unlock
  std::lock_guard<std::mutex> lock(mutex_);
  Result<ModelCache::Handle> admitted =
      cache_->admit(fingerprint, "uploaded model " + fingerprint, fingerprint,
                    {session, session->weight_bytes(), seconds}, ModelCache::Admit::kInitial, &released);
  if (!admitted.is_ok()) {
    if (keep_bytes && !spilled_.count(fingerprint)) ::unlink(spill_path(fingerprint).c_str());
    return admitted.status();
  }
  if (keep_bytes) spilled_[fingerprint] = spill_path(fingerprint);
  auto held = std::static_pointer_cast<const Session>(admitted.value());
  return Added{held, held != session};
}

}  // namespace sdx::serve
