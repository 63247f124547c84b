// Xxh3Digest: the XXH3-128 digest (xxHash) of a byte stream as 32 lowercase hex digits, so sdx can check
// that a file it is about to load code from holds the bytes it wrote (the JIT disk cache's manifests,
// backend/cpu/jit/cache_manifest.h). It guards against truncated, bit-flipped or replaced files; the
// folder's ownership and mode checks (backend/cpu/jit/cache_permissions.h, verified_file.h) keep other users
// out, and a process running as the same user could rewrite the manifest too, so a cryptographic hash
// would add nothing. Why not SHA-256 (libcrypto) as before: OpenSSL initializes itself on first use
// (its configuration and providers), 0.9-1.1 ms in the first kernel load of every process on this VM,
// against ~2 us for XXH3 over a 15 KB kernel.
//
//   Xxh3Digest h;
//   h.update(buf, n);                                  // any number of times
//   std::string hex = h.finish();                      // 32 lowercase hex digits
//
//   std::string d = Xxh3Digest::hex_digest("abc");     // one-shot
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace sdx {

class Xxh3Digest {
 public:
  Xxh3Digest();
  ~Xxh3Digest();
  Xxh3Digest(const Xxh3Digest&) = delete;
  Xxh3Digest& operator=(const Xxh3Digest&) = delete;

  void update(const void* data, size_t n);
  // The digest of everything updated so far.
  std::string finish() const;

  static std::string hex_digest(std::string_view data);

 private:
  struct State;
  std::unique_ptr<State> state_;  // XXH3_state_t: the header stays free of xxhash.h
};

}  // namespace sdx
