// XXH3-64 on xxHash's AVX2 code path: xxhash.h compiled inline in this file only, with -mavx2 (CMakeLists.txt),
// and handed out only when the CPU has AVX2 (core/xxh3.h).
#include <cstddef>
#include <cstdint>

#if defined(__AVX2__)
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>
#endif

namespace sdx::detail {

#if defined(__AVX2__)
namespace {
uint64_t xxh3_64_avx2_impl(const void* data, size_t size) { return XXH3_64bits(data, size); }
}  // namespace
uint64_t (*xxh3_64_avx2())(const void*, size_t) {
  return __builtin_cpu_supports("avx2") ? &xxh3_64_avx2_impl : nullptr;
}
#else
uint64_t (*xxh3_64_avx2())(const void*, size_t) { return nullptr; }
#endif

}  // namespace sdx::detail
