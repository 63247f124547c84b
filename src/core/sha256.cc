#include "core/sha256.h"

#include <openssl/evp.h>

namespace sdx {

Sha256::Sha256() {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ctx_ = ctx;
  ok_ = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1;
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(const void* data, size_t n) {
  if (ok_ && n > 0) ok_ = EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) == 1;
}

Result<std::string> Sha256::finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const bool ok = ok_ && EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &len) == 1 && len == 32;
  ok_ = false;  // spent
  if (!ok) return internal_error("SHA-256 (libcrypto) failed");
  static const char kHex[] = "0123456789abcdef";
  std::string hex(2 * len, '0');
  for (unsigned int i = 0; i < len; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 15];
  }
  return hex;
}

Result<std::string> Sha256::hex_digest(std::string_view data) {
  Sha256 h;
  h.update(data.data(), data.size());
  return h.finish();
}

}  // namespace sdx
