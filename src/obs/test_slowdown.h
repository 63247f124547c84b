// A test-only hook that makes one op type slower, so tests can check that the regression detector
// (`sdx bench --compare`) flags a slow kernel: SDX_TEST_SLOWDOWN="Op=1.2" (read when sdx loads) or
// set_test_slowdown("Op", 1.2) makes every execution of op type "Op" take 1.2 times as long, by
// busy-waiting after the kernel. Off, it costs nothing beyond the observer flag (obs/observers.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace sdx::obs {

// factor <= 1 turns the hook off. `op` is an op type as the op timing tracker names it ("MatMul",
// "sdx.Linear").
void set_test_slowdown(std::string_view op, double factor);
// Busy-waits (factor - 1) * elapsed_ns when `op` (interned) is the slowed op type.
void apply_test_slowdown(const char* op, uint64_t elapsed_ns);

}  // namespace sdx::obs
