// Counts heap allocations made by the calling thread (global operator new is replaced
// in heap_counter_test.cc, once for the whole sdx_tests binary).
//
//   const uint64_t before = sdx::test::heap_allocations();
//   replay();
//   EXPECT_EQ(sdx::test::heap_allocations() - before, 0u);
#pragma once

#include <cstdint>

namespace sdx::test {

uint64_t heap_allocations();

}  // namespace sdx::test
