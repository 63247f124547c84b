#include "core/allocator.h"

#include <cstdlib>

namespace sdx {
namespace {
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    if (rounded == 0) rounded = kTensorAlignment;
    return std::aligned_alloc(kTensorAlignment, rounded);
  }
  void free(void* p) override { std::free(p); }
  const char* name() const override { return "cpu"; }
};
}  // namespace

Allocator* cpu_allocator() {
  static CpuAllocator alloc;
  return &alloc;
}

}  // namespace sdx
