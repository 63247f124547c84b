// The one word the execution hot path reads per op to learn whether anyone observes it: the op timing
// tracker's mode, event subscribers, the debugger. With nothing active an op costs one relaxed load of
// g_observers and a branch.
//
//   if (obs::observers() == 0) return run();   // the common case
#pragma once

#include <atomic>
#include <cstdint>

namespace sdx::obs {

enum ObserverBits : uint32_t {
  kObserveTiming = 1u << 0,  // OpTimingTracker::global() is in simple mode or above
  kObservePhases = 1u << 1,  // ... in detailed or trace mode (per-phase times)
  kObserveTrace = 1u << 2,   // ... in trace mode (every execution kept for the Chrome trace)
  kObserveEvents = 1u << 3,  // an event subscriber or recorder is attached
  kObserveSlowdown = 1u << 4,  // the test-only slowdown hook is set (obs/test_slowdown.h)
};

// Set by whoever turns an observer on or off (a rare, synchronized event); read relaxed on the hot path,
// which only needs to see the change eventually: the observers' own data is published separately.
inline std::atomic<uint32_t> g_observers{0};

inline uint32_t observers() { return g_observers.load(std::memory_order_relaxed); }

}  // namespace sdx::obs
