// CacheManifest: the record the JIT disk cache keeps next to each compiled kernel
// (<key>.manifest beside <key>.so), so that a loader can tell whether the library it finds is the
// one that was written. It is checked before the library is handed to dlopen (backend/cpu/jit/verified_file.h):
// a library that is truncated, bit-flipped, replaced, or has no (or a malformed) manifest is never
// loaded; the engine deletes the entry and compiles it again.
//
// The text form (parse() accepts exactly this, in this order):
//   sdx-jit-manifest 2
//   key <the cache key, 16 hex digits>
//   size <library bytes>
//   xxh3_128 <32 lowercase hex digits of the library's XXH3-128 (core/xxh3_digest.h)>
//
//   CacheManifest m{key, file.size(), file.digest()};
//   cache.write_file(cache.manifest_path(key), m.to_text());
//   SDX_ASSIGN_OR_RETURN(CacheManifest read, CacheManifest::parse(text), "");
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace sdx::jit {

// 2: the digest is XXH3-128 (1 was SHA-256; such manifests are refused, their kernels compiled again).
inline constexpr int kCacheManifestVersion = 2;

struct CacheManifest {
  std::string key;
  int64_t size = 0;
  std::string digest;  // 32 lowercase hex digits of the library's XXH3-128

  std::string to_text() const;
  // data_loss (with what is wrong) for anything but the exact form above.
  static Result<CacheManifest> parse(const std::string& text);
};

}  // namespace sdx::jit
