#include "backend/cpu/parallel_copy.h"

#include <cstring>

#include "backend/cpu/thread_pool.h"

namespace sdx::cpu {

void parallel_copy(void* dst, const void* src, size_t bytes) {
  if (bytes < kParallelCopyMinBytes || current_num_threads() < 2) {
    if (bytes) std::memcpy(dst, src, bytes);
    return;
  }
  // Pieces of 4 KiB (whole pages in aligned buffers); each chunk copies a contiguous run of them.
  constexpr size_t kPiece = 4096;
  const auto pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  parallel_for(pieces, static_cast<int64_t>(kParallelCopyMinBytes / 2 / kPiece), [&](int64_t b, int64_t e) {
    const size_t begin = static_cast<size_t>(b) * kPiece;
    const size_t end = e == pieces ? bytes : static_cast<size_t>(e) * kPiece;
    std::memcpy(d + begin, s + begin, end - begin);
  });
}

}  // namespace sdx::cpu
