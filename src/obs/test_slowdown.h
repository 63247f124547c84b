// A test-only hook that makes one op type slower, so tests can check that the regression detector
// (`sdx bench --compare`) flags a slow kernel: SDX_TEST_SLOWDOWN="Op=1.2" (read when sdx loads) or
// set_test_slowdown("Op", 1.2) makes every execution of op type "Op" take 1.2 times as long, by
// busy-waiting after the kernel. Set, it costs one observer-flag test per step (obs/observers.h).
//
// Test-only, so only test builds have it: CMakeLists.txt compiles it in when SDX_BUILD_TESTS is ON (the
// README's test command) and defines SDX_TEST_HOOKS=0 or 1 on every file that includes this header. With
// 0 (release builds, the wheel) obs/test_slowdown.cc is not compiled, the call sites compile to nothing
// (`if constexpr (obs::kTestHooks)`), SDX_TEST_SLOWDOWN is not read and _sdx has no _test_set_slowdown.
//
//   if constexpr (obs::kTestHooks)
//     if (obs::observers() & obs::kObserveSlowdown) obs::apply_test_slowdown(op, obs::now_ns() - t0);
#pragma once

#include <cstdint>
#include <string_view>

#if !defined(SDX_TEST_HOOKS)
#error "obs/test_slowdown.h needs SDX_TEST_HOOKS (0 or 1): add this file to SDX_TEST_HOOK_FILES in CMakeLists.txt"
#endif

namespace sdx::obs {

inline constexpr bool kTestHooks = SDX_TEST_HOOKS != 0;

#if SDX_TEST_HOOKS
// factor <= 1 turns the hook off. `op` is an op type as the op timing tracker names it ("MatMul",
// "sdx.Linear").
void set_test_slowdown(std::string_view op, double factor);
// Busy-waits (factor - 1) * elapsed_ns when `op` (interned) is the slowed op type.
void apply_test_slowdown(const char* op, uint64_t elapsed_ns);
#else
inline void apply_test_slowdown(const char*, uint64_t) {}  // never called: the call sites are compiled out
#endif

}  // namespace sdx::obs
