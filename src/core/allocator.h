// Allocator interface and the default CPU allocator (64-byte aligned).
//
//   void* p = cpu_allocator()->allocate(bytes);  ...  cpu_allocator()->free(p);
#pragma once

#include <cstddef>
#include <cstdint>

namespace sdx {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns nullptr on failure. Zero bytes returns a valid unique pointer.
  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual const char* name() const = 0;
};

inline constexpr size_t kTensorAlignment = 64;

Allocator* cpu_allocator();

// Successful cpu_allocator() allocations since start (a statistic for tests and
// reports; counted with relaxed atomics: it publishes nothing).
uint64_t cpu_allocation_count();

}  // namespace sdx
