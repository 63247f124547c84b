// FNV-1a, 64 bits: the cache and bundle key hash (the DSP design's disk cache). Not for security: files
// that are loaded as code are checked with XXH3-128 (core/xxh3_digest.h).
//
//   uint64_t h = fnv1a64(model_bytes);
//   h = fnv1a64(options_text, h);   // chained
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace sdx {

inline constexpr uint64_t kFnv1aOffset = 14695981039346656037ULL;

inline uint64_t fnv1a64(std::string_view data, uint64_t h = kFnv1aOffset) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// 16 lowercase hex digits: how cache keys and digests are written in file names and manifests.
inline std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace sdx
