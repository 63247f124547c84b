#include "runtime/buffer_pool.h"

#include <cstring>

#include "core/allocator.h"

namespace sdx::runtime {

std::shared_ptr<void> BufferPool::acquire(int64_t bytes, DType dtype, Device device) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = idle_.size(); i-- > 0;) {
      Idle& e = idle_[i];
      if (e.bytes != bytes || e.dtype != dtype || e.device != device) continue;
      std::shared_ptr<void> b = std::move(e.block);
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
      ++stats_.hits;
      --stats_.idle_blocks;
      stats_.idle_bytes -= bytes;
      std::memset(b.get(), 0xff, static_cast<size_t>(bytes));
      return b;
    }
    ++stats_.misses;
  }
  void* p = cpu_allocator()->allocate(static_cast<size_t>(bytes > 0 ? bytes : 1));
  if (!p) return nullptr;
  std::memset(p, 0xff, static_cast<size_t>(bytes));
  return std::shared_ptr<void>(p, [](void* q) { cpu_allocator()->free(q); });
}

void BufferPool::release(std::shared_ptr<void> block, int64_t bytes, DType dtype, Device device) {
  if (!block || block.use_count() != 1) return;  // still referenced: it frees itself when the last user lets go
  std::vector<Idle> freed;                       // destroyed outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back({bytes, dtype, device, std::move(block)});
    ++stats_.idle_blocks;
    stats_.idle_bytes += bytes;
    while (stats_.idle_bytes > max_bytes_ && !idle_.empty()) {
      stats_.idle_bytes -= idle_.front().bytes;
      --stats_.idle_blocks;
      freed.push_back(std::move(idle_.front()));
      idle_.erase(idle_.begin());
    }
  }
}

void BufferPool::trim(int64_t max_bytes) {
  std::vector<Idle> freed;
  std::lock_guard<std::mutex> lock(mu_);
  while (stats_.idle_bytes > max_bytes && !idle_.empty()) {
    stats_.idle_bytes -= idle_.front().bytes;
    --stats_.idle_blocks;
    freed.push_back(std::move(idle_.front()));
    idle_.erase(idle_.begin());
  }
}

BufferPoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace sdx::runtime
