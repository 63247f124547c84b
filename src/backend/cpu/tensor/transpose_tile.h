// A 2-D transpose of 4-byte elements in 16 x 16 tiles of 4 x 4 SSE2 register blocks (the edges one
// by one), each tile's source and destination rows moved whole: the
// inner loop of the channel-blocking reorders (channel_blocked.h), of Transpose's tiles
// (permute.h) and of ConvInteger's output transpose, which otherwise move one element per strided
// load.
//
//   transpose_tile_32(src, lds, dst, ldd, rows, cols);  // dst[c * ldd + r] = src[r * lds + c]
//
// Bitwise a copy: any 4-byte type (float, int32_t, uint32_t) goes through it.
#pragma once

#include <cstdint>

namespace sdx::cpu {

// dst[c * ldd + r] = src[r * lds + c] for r in [0, rows), c in [0, cols); the ranges must not
// overlap.
void transpose_tile_32(const void* src, int64_t lds, void* dst, int64_t ldd, int64_t rows, int64_t cols);

}  // namespace sdx::cpu
