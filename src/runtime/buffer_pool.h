// BufferPool: frozen memory blocks kept across plans, keyed by (bytes, dtype, device).
// A plan that is passivated or evicted gives its blocks back here; a plan that
// freezes takes an exact match before asking the allocator. The pool keeps at most
// `max_bytes` idle (the oldest beyond that are freed). Thread-safe.
//
//   std::shared_ptr<void> b = pool.acquire(4096, DType::kUint8, Device::kCpu);  // pooled or new
//   pool.release(std::move(b), 4096, DType::kUint8, Device::kCpu);              // idle again
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/dtype.h"

namespace sdx::runtime {

enum class Device : uint8_t { kCpu };

struct BufferPoolStats {
  int64_t hits = 0, misses = 0;
  int64_t idle_blocks = 0, idle_bytes = 0;
};

class BufferPool {
 public:
  explicit BufferPool(int64_t max_bytes) : max_bytes_(max_bytes) {}
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A block of exactly `bytes` (64-byte aligned, poisoned with 0xFF bytes so a kernel that
  // reads an output before writing it fails loudly), or null when allocation fails.
  std::shared_ptr<void> acquire(int64_t bytes, DType dtype, Device device);
  // Returns a block this pool handed out. Only the last reference may be released.
  void release(std::shared_ptr<void> block, int64_t bytes, DType dtype, Device device);
  // Frees idle blocks, oldest first, until at most max_bytes stay idle.
  void trim(int64_t max_bytes);
  BufferPoolStats stats() const;

 private:
  struct Idle {
    int64_t bytes;
    DType dtype;
    Device device;
    std::shared_ptr<void> block;
  };
  mutable std::mutex mu_;
  int64_t max_bytes_;
  std::vector<Idle> idle_;  // oldest first
  BufferPoolStats stats_;
};

}  // namespace sdx::runtime
