// Permuted copies (Transpose and the ops built on it), planned once and split over the
// session's pool.
//
//   PermutePlan p = PermutePlan::make(out_dims, in_strides);  // the output walked row-major,
//   permute(p, src, dst);                                       // each dim's stride in src
//
// make() drops size-1 dims and merges neighbours that stay contiguous in the input, so the
// common 4-D perms reduce to 2-3 dims: [0, 2, 1, 3] copies contiguous runs of the last dim
// (split over the pool by runs), [0, 1, 3, 2] is a batch of 2-D transposes, done in square
// tiles so that both the reads and the writes stay within a few cache lines (4-byte elements in
// SSE2 register blocks, transpose_tile.h). Every element is copied once by one thread; the result
// does not depend on the thread count. permute() does not allocate (the plan is built in prepare()
// for bound kernels).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/tensor/collapse_dims.h"
#include "backend/cpu/tensor/small_buffer.h"
#include "backend/cpu/tensor/transpose_tile.h"
#include "backend/cpu/threading/thread_pool.h"

namespace sdx::cpu {

struct PermutePlan {
  std::vector<int64_t> dims;     // collapsed output dims, row-major
  std::vector<int64_t> strides;  // input stride of each (elements)
  int64_t total = 0;
  // With a strided innermost dim: the dim whose input stride is 1, tiled against the innermost;
  // -1 when the innermost dim is contiguous in the input (or there is at most one dim).
  int tile_dim = -1;

  static PermutePlan make(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& in_strides) {
    PermutePlan p;
    p.total = 1;
    for (int64_t d : out_dims) p.total *= d;
    p.dims.resize(out_dims.size());
    p.strides.resize(out_dims.size());
    const size_t n = collapse_dims(out_dims, in_strides, p.dims, p.strides);
    p.dims.resize(n);
    p.strides.resize(n);
    const int r = static_cast<int>(p.dims.size());
    if (r >= 2 && p.strides.back() != 1)
      for (int d = 0; d < r - 1; ++d)
        if (p.strides[static_cast<size_t>(d)] == 1) p.tile_dim = d;
    return p;
  }
};

namespace detail {
// Bytes per parallel chunk of a permuted copy (2-5 us of copying). A transpose usually reads what the
// previous op's threads just wrote into their own caches, so splitting it pays off early: BERT's head
// transposes (128 KiB each) went from 9.3 to 5.2 us at 2 threads when this fell from 128 to 32 KiB.
inline constexpr int64_t kPermuteGrainBytes = int64_t{1} << 15;
// Tile edge of the 2-D transposes: 16 x 16 elements (1 KiB of floats each way).
inline constexpr int64_t kPermuteTile = 16;
}  // namespace detail

template <typename T>
void permute(const PermutePlan& p, const T* src, T* dst) {
  if (p.total == 0) return;
  const int r = static_cast<int>(p.dims.size());
  if (r <= 1) {  // a plain copy (or one strided run)
    const int64_t step = r == 0 ? 1 : p.strides[0];
    parallel_for(p.total, std::max<int64_t>(1, detail::kPermuteGrainBytes / static_cast<int64_t>(sizeof(T))),
                 [&](int64_t b, int64_t e) {
                   if (step == 1 && std::is_trivially_copyable_v<T>)
                     std::memcpy(static_cast<void*>(dst + b), src + b, static_cast<size_t>(e - b) * sizeof(T));
                   else
                     for (int64_t i = b; i < e; ++i) dst[i] = src[i * step];
                 });
    return;
  }
  const size_t last = static_cast<size_t>(r - 1);
  const int64_t len = p.dims[last], last_stride = p.strides[last];
  if (p.tile_dim < 0) {
    // Runs of the innermost dim, each contiguous in dst (and in src when its stride is 1).
    const int64_t runs = p.total / len;
    const int64_t grain = std::max<int64_t>(1, detail::kPermuteGrainBytes / (len * static_cast<int64_t>(sizeof(T))));
    parallel_for(runs, grain, [&](int64_t first, int64_t end) {
      SmallBuffer<int64_t, 8> idx(last, 0);
      int64_t in = 0;
      for (int64_t rest = first, d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
        const size_t du = static_cast<size_t>(d);
        idx[du] = rest % p.dims[du];
        rest /= p.dims[du];
        in += idx[du] * p.strides[du];
      }
      for (int64_t run = first; run < end; ++run) {
        T* out = dst + run * len;
        if (last_stride == 1) {
          if constexpr (std::is_trivially_copyable_v<T>) std::memcpy(static_cast<void*>(out), src + in, static_cast<size_t>(len) * sizeof(T));
          else std::copy(src + in, src + in + len, out);
        } else {
          for (int64_t k = 0; k < len; ++k) out[k] = src[in + k * last_stride];
        }
        for (int64_t d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
          const size_t du = static_cast<size_t>(d);
          in += p.strides[du];
          if (++idx[du] < p.dims[du]) break;
          in -= p.strides[du] * p.dims[du];
          idx[du] = 0;
        }
      }
    });
    return;
  }
  // Batches of 2-D transposes between dim j (contiguous in src) and the innermost dim
  // (contiguous in dst), in tiles; work items are (batch index, tile row of dim j).
  const size_t j = static_cast<size_t>(p.tile_dim);
  const int64_t rows = p.dims[j];
  int64_t out_stride_j = 1;
  for (size_t d = j + 1; d < static_cast<size_t>(r); ++d) out_stride_j *= p.dims[d];
  const int64_t tile = detail::kPermuteTile;
  const int64_t row_tiles = (rows + tile - 1) / tile;
  const int64_t items = p.total / (rows * len) * row_tiles;
  const int64_t grain =
      std::max<int64_t>(1, detail::kPermuteGrainBytes / (tile * len * static_cast<int64_t>(sizeof(T))));
  parallel_for(items, grain, [&](int64_t first, int64_t end) {
    for (int64_t item = first; item < end; ++item) {
      // Decompose the batch index over the dims other than j and the innermost, row-major.
      int64_t batch = item / row_tiles;
      const int64_t i0 = (item % row_tiles) * tile, i1 = std::min(rows, i0 + tile);
      int64_t in = 0, out = 0, out_stride = len;  // out_stride: dst stride of dim d
      for (int64_t d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
        const size_t du = static_cast<size_t>(d);
        if (du != j) {
          const int64_t i = batch % p.dims[du];
          batch /= p.dims[du];
          in += i * p.strides[du];
          out += i * out_stride;
        }
        out_stride *= p.dims[du];
      }
      if constexpr (sizeof(T) == 4 && std::is_trivially_copyable_v<T>) {
        // [len][i1 - i0] (rows last_stride apart) -> [i1 - i0][len], in SSE2 4 x 4 blocks.
        transpose_tile_32(src + in + i0, last_stride, dst + out + i0 * out_stride_j, out_stride_j, len, i1 - i0);
        continue;
      }
      for (int64_t k0 = 0; k0 < len; k0 += tile) {
        const int64_t k1 = std::min(len, k0 + tile);
        for (int64_t i = i0; i < i1; ++i) {
          const T* s = src + in + i;
          T* o = dst + out + i * out_stride_j;
          for (int64_t k = k0; k < k1; ++k) o[k] = s[k * last_stride];
        }
      }
    }
  });
}

}  // namespace sdx::cpu
