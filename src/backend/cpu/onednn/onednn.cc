// See onednn.h.
#include "backend/cpu/onednn/onednn.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if SDX_WITH_ONEDNN
#include <omp.h>
#endif

namespace sdx::cpu {
namespace {

// Read once; tests change it with set_onednn_enabled (relaxed: a plain switch, nothing is published
// through it; tests flip it between runs on one thread).
std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{[] {
    const char* v = std::getenv("SDX_NO_ONEDNN");
    return !(v && std::strcmp(v, "1") == 0);
  }()};
  return flag;
}

}  // namespace

bool onednn_built() { return SDX_WITH_ONEDNN != 0; }

bool onednn_enabled() { return onednn_built() && enabled_flag().load(std::memory_order_relaxed); }

void set_onednn_enabled(bool enabled) { enabled_flag().store(enabled, std::memory_order_relaxed); }

#if SDX_WITH_ONEDNN
OneDnnSingleThread::OneDnnSingleThread() : previous_(omp_get_max_threads()) {
  if (previous_ != 1) omp_set_num_threads(1);
}
OneDnnSingleThread::~OneDnnSingleThread() {
  if (previous_ != 1) omp_set_num_threads(previous_);
}
#else
OneDnnSingleThread::OneDnnSingleThread() = default;
OneDnnSingleThread::~OneDnnSingleThread() = default;
#endif

}  // namespace sdx::cpu
