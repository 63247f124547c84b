// The replacement global operator new behind heap_counter.h, and a test that it counts.
#include "heap_counter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

// Every form forwards to malloc / posix_memalign, so every delete is free (GCC cannot see
// that these replace the library's operator new and would warn about a mismatch).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {

thread_local uint64_t t_heap_allocations = 0;

void* counted_malloc(std::size_t n) noexcept {
  ++t_heap_allocations;
  return std::malloc(n ? n : 1);
}
void* counted_aligned(std::size_t n, std::align_val_t al) noexcept {
  ++t_heap_allocations;
  std::size_t a = static_cast<std::size_t>(al);
  if (a < sizeof(void*)) a = sizeof(void*);
  void* p = nullptr;
  return posix_memalign(&p, a, n ? n : 1) == 0 ? p : nullptr;
}
void* checked(void* p) {
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return checked(counted_malloc(n)); }
void* operator new[](std::size_t n) { return checked(counted_malloc(n)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new(std::size_t n, std::align_val_t a) { return checked(counted_aligned(n, a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return checked(counted_aligned(n, a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace sdx::test {
uint64_t heap_allocations() { return t_heap_allocations; }
}  // namespace sdx::test

namespace sdx::test {
namespace {

TEST(HeapCounter, CountsThisThreadsAllocations) {
  const uint64_t before = heap_allocations();
  auto p = std::make_unique<std::vector<int>>(100);
  std::string s(200, 'x');
  EXPECT_GE(heap_allocations() - before, 3u);
  const uint64_t mid = heap_allocations();
  int sum = 0;
  for (int v : *p) sum += v;
  EXPECT_EQ(heap_allocations(), mid);
  EXPECT_EQ(sum, 0);
}

}  // namespace
}  // namespace sdx::test
