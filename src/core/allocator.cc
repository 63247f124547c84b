#include "core/allocator.h"

#include <atomic>
#include <cstdlib>

namespace sdx {
namespace {
std::atomic<uint64_t> g_allocations{0};

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    if (rounded == 0) rounded = kTensorAlignment;
    void* p = std::aligned_alloc(kTensorAlignment, rounded);
    if (p) g_allocations.fetch_add(1, std::memory_order_relaxed);
    return p;
  }
  void free(void* p) override { std::free(p); }
  const char* name() const override { return "cpu"; }
};
}  // namespace

uint64_t cpu_allocation_count() { return g_allocations.load(std::memory_order_relaxed); }

Allocator* cpu_allocator() {
  static CpuAllocator alloc;
  return &alloc;
}

}  // namespace sdx
