// xxh3_64: XXH3-64 (xxHash, seed 0) of a byte range, the hash of bundle checksums and of the disk plan
// cache's model keys. On a CPU with AVX2 it runs xxHash's own AVX2 code path (xxhash.h compiled inline with
// -mavx2, core/xxh3_avx2.cc), else the shared library's XXH3_64bits; every path gives the same value (XXH3
// is defined bit for bit, whatever the vector width).
//
// Why not just libxxhash: Debian builds it for baseline x86-64 (SSE2). Over a page-cached 25 MB bundle on
// this VM the library takes 1.6-1.8 ms and the AVX2 path 0.85-0.9 ms, and every bundle load and every
// disk-cache lookup reads the whole file.
//
//   uint64_t h = sdx::xxh3_64(data, size);
#pragma once

#include <cstddef>
#include <cstdint>

namespace sdx {

uint64_t xxh3_64(const void* data, size_t size);

}  // namespace sdx
