#include "obs/test_slowdown.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "obs/observers.h"
#include "obs/op_timing_tracker.h"

namespace sdx::obs {
namespace {

std::atomic<const char*> g_op{nullptr};  // interned; compared by pointer
std::atomic<double> g_factor{1.0};

// SDX_TEST_SLOWDOWN=Op=factor, applied when the library loads.
const bool g_from_env = [] {
  const char* v = std::getenv("SDX_TEST_SLOWDOWN");
  if (!v) return false;
  const std::string s = v;
  const size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0) return false;
  set_test_slowdown(s.substr(0, eq), std::atof(s.c_str() + eq + 1));
  return true;
}();

}  // namespace

void set_test_slowdown(std::string_view op, double factor) {
  if (factor <= 1.0 || op.empty()) {
    g_observers.fetch_and(~uint32_t{kObserveSlowdown}, std::memory_order_relaxed);
    g_op.store(nullptr, std::memory_order_relaxed);
    return;
  }
  g_factor.store(factor, std::memory_order_relaxed);
  // Publishes the factor stored above to threads that acquire the op pointer.
  g_op.store(intern_name(op), std::memory_order_release);
  g_observers.fetch_or(kObserveSlowdown, std::memory_order_relaxed);
}

void apply_test_slowdown(const char* op, uint64_t elapsed_ns) {
  const char* slowed = g_op.load(std::memory_order_acquire);
  if (!slowed || slowed != op) return;
  const auto extra = static_cast<uint64_t>((g_factor.load(std::memory_order_relaxed) - 1.0) * static_cast<double>(elapsed_ns));
  const uint64_t until = now_ns() + extra;
  while (now_ns() < until) {
  }
}

}  // namespace sdx::obs
