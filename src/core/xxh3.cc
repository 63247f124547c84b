#include "core/xxh3.h"

#include <xxhash.h>

namespace sdx {
namespace detail {
// core/xxh3_avx2.cc: null where the file was built without AVX2 (not x86-64).
uint64_t (*xxh3_64_avx2())(const void*, size_t);
}  // namespace detail

uint64_t xxh3_64(const void* data, size_t size) {
  static uint64_t (*const fast)(const void*, size_t) = detail::xxh3_64_avx2();
  return fast ? fast(data, size) : XXH3_64bits(data, size);
}

}  // namespace sdx
