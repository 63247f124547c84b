// Sha256: SHA-256 digests through OpenSSL's libcrypto (the EVP interface), so sdx can check
// that a file it is about to load code from holds the bytes it wrote (the JIT disk cache's
// manifests, jit/cache_manifest.h). We do not implement the hash ourselves: a well-kept library
// is the one place a subtle mistake in it would be found.
//
//   Sha256 h;
//   h.update(buf, n);                                  // any number of times
//   SDX_ASSIGN_OR_RETURN(std::string hex, h.finish(), "hashing k.so");   // 64 lowercase hex digits
//
//   Result<std::string> d = Sha256::hex_digest("abc");  // one-shot
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sdx {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t n);
  // The digest as 64 lowercase hex digits; the hasher is spent afterwards. An error when
  // libcrypto failed at any step (it does not, short of running out of memory).
  Result<std::string> finish();

  static Result<std::string> hex_digest(std::string_view data);

 private:
  void* ctx_ = nullptr;  // EVP_MD_CTX*: the header stays free of OpenSSL's (linked PRIVATE)
  bool ok_ = false;
};

}  // namespace sdx
