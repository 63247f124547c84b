#include "core/xxh3_digest.h"

#include <xxhash.h>

#include <new>

namespace sdx {

struct Xxh3Digest::State {
  XXH3_state_t* s = XXH3_createState();
  ~State() { XXH3_freeState(s); }
};

Xxh3Digest::Xxh3Digest() : state_(std::make_unique<State>()) {
  if (!state_->s) throw std::bad_alloc();
  XXH3_128bits_reset(state_->s);
}

Xxh3Digest::~Xxh3Digest() = default;

void Xxh3Digest::update(const void* data, size_t n) {
  if (n > 0) XXH3_128bits_update(state_->s, data, n);
}

std::string Xxh3Digest::finish() const {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state_->s));
  static const char kHex[] = "0123456789abcdef";
  std::string hex(2 * sizeof(c.digest), '0');
  for (size_t i = 0; i < sizeof(c.digest); ++i) {
    hex[2 * i] = kHex[c.digest[i] >> 4];
    hex[2 * i + 1] = kHex[c.digest[i] & 15];
  }
  return hex;
}

std::string Xxh3Digest::hex_digest(std::string_view data) {
  Xxh3Digest h;
  h.update(data.data(), data.size());
  return h.finish();
}

}  // namespace sdx
