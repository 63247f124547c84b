#include "serve/memory_trimmer.h"

#include <chrono>
#include <cstdlib>

#include "serve/metrics.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sdx::serve {

bool MemoryTrimmer::fix_malloc_thresholds(int mmap_threshold, int trim_threshold) {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_")) return false;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
  return mmap_ok && trim_ok;
#else
  (void)mmap_threshold;
  (void)trim_threshold;
  return false;
#endif
}

MemoryTrimmer::MemoryTrimmer(Metric* seconds) : seconds_(seconds) {
#if defined(__GLIBC__)
  thread_ = std::thread([this] { loop(); });
#endif
}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryTrimmer::request() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = true;
  }
  wake_.notify_one();
}

uint64_t MemoryTrimmer::trims() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trims_;
}

void MemoryTrimmer::loop() {
#if defined(__GLIBC__)
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return pending_ || stop_; });
    if (stop_) return;
    pending_ = false;  // a request() from now on asks for another trim
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    malloc_trim(0);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds_) seconds_->observe(took);
    lock.lock();
    ++trims_;
  }
#endif
}

}  // namespace sdx::serve
