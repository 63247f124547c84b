// Pins the calling thread to one CPU for a scope and gives it back its affinity afterwards, also
// when an ASSERT leaves the test early (so later tests do not run pinned). Linux only.
//
//   ThreadPool pool(2);                 // first: workers inherit the unpinned affinity
//   sdx::test::PinnedThread pin;
//   if (pin.cpus_before() < 2) GTEST_SKIP() << "needs at least 2 CPUs";
//   ASSERT_TRUE(pin.ok());              // now on pin.cpu()
#pragma once

#if defined(__linux__)
#include <sched.h>

namespace sdx::test {

class PinnedThread {
 public:
  PinnedThread() {
    CPU_ZERO(&original_);
    if (sched_getaffinity(0, sizeof original_, &original_) != 0) return;
    saved_ = true;
    cpus_before_ = CPU_COUNT(&original_);
    while (cpu_ < CPU_SETSIZE && !CPU_ISSET(cpu_, &original_)) ++cpu_;
    if (cpu_ == CPU_SETSIZE) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu_, &one);
    pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~PinnedThread() {
    if (saved_) sched_setaffinity(0, sizeof original_, &original_);
  }
  PinnedThread(const PinnedThread&) = delete;
  PinnedThread& operator=(const PinnedThread&) = delete;

  bool ok() const { return pinned_; }
  int cpu() const { return cpu_; }                   // the CPU the thread is pinned to
  int cpus_before() const { return cpus_before_; }  // CPUs it could run on before

 private:
  cpu_set_t original_;
  bool saved_ = false, pinned_ = false;
  int cpu_ = 0, cpus_before_ = 0;
};

}  // namespace sdx::test
#endif
