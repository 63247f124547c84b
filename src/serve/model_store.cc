#include "serve/model_store.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace sdx::serve {

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

std::shared_ptr<const Session> ModelStore::find(const std::string& fingerprint) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = models_.find(fingerprint);
  return it == models_.end() ? nullptr : it->second;
}

Result<ModelStore::Added> ModelStore::add(const std::string& fingerprint, std::string_view bytes) {
  if (auto held = find(fingerprint)) return Added{std::move(held), true};
  Result<Session> loaded = Session::load_bytes(bytes, options_);
  if (!loaded.is_ok()) return loaded.status().with_context("uploaded model " + fingerprint);
  auto session = std::make_shared<const Session>(std::move(loaded).value());
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = models_.emplace(fingerprint, std::move(session));
  return Added{it->second, !inserted};
}

size_t ModelStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return models_.size();
}

}  // namespace sdx::serve
