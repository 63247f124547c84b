// parallel_copy: a memcpy split over the calling thread's pool (cpu::parallel_for) when it is
// large enough to pay for waking the workers, used for the big copies of a call: the inputs copied
// into a plan's static buffers, Concat (a KV cache grows by one row per decode step and is copied
// whole), and outputs handed to Python.
//
//   cpu::parallel_copy(dst, src, bytes);   // == std::memcpy(dst, src, bytes)
#pragma once

#include <cstddef>
#include <cstdint>

namespace sdx::cpu {

// Copies at or above this size are split over the pool, in pieces of at least half of it.
inline constexpr size_t kParallelCopyMinBytes = size_t{64} << 10;

// std::memcpy(dst, src, bytes) (the ranges must not overlap), split over the bound pool when
// bytes >= kParallelCopyMinBytes. Without a pool, or nested in a parallel region, one memcpy.
void parallel_copy(void* dst, const void* src, size_t bytes);

// `rows` runs of row_bytes: run r from src + r * src_stride to dst + r * dst_stride (Concat and Split
// rows, a graph input placed in a Concat's output). One run: parallel_copy; else split over the pool by
// runs when rows * row_bytes >= kParallelCopyMinBytes.
void copy_rows(void* dst, size_t dst_stride, const void* src, size_t src_stride, size_t row_bytes, size_t rows);

}  // namespace sdx::cpu
