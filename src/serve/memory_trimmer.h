// Gives freed heap memory back to the OS after sdx.v1 sessions end: glibc keeps large freed chunks in its
// arenas (its mmap threshold rises the first time a large mmapped block is freed), so the bytes of a
// session's refs would stay in the server's RSS after the refs are freed. malloc_trim(0) returns the free
// pages of every arena (madvise), and it runs here, on a thread of its own, never on a request's path.
//
//   serve::MemoryTrimmer trimmer(metrics->remote()->malloc_trim);   // a histogram of each trim's seconds
//   refs.drop_session(id);
//   trimmer.request();          // returns at once; the thread trims soon after (requests coalesce)
//
// malloc_trim alone is not enough under glibc's defaults: it returns the free chunks in every arena's bins
// and the main arena's top, but not the top chunk of a per-thread arena (where a freed block that was the
// arena's last lands), which glibc shrinks only on free, once it passes the trim threshold -- and glibc raises
// that threshold (with the mmap threshold) the first time a large mmapped block is freed. Measured on the
// killed-client test (tests/python/test_serve_faults.py): with malloc_trim and the defaults, none of a
// session's 32 MiB of refs left RSS after cycle 0. So the server also fixes the thresholds at start
// (fix_malloc_thresholds: large blocks mmapped, returned on free; the rest trimmed) unless the operator set
// MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ in the environment (glibc's own settings win).
//
// Requests made while a trim runs lead to one more trim after it, so memory freed before any request() is
// always covered by a trim that starts after it. Without glibc (no malloc_trim) request() does nothing.
// Thread-safe; the destructor stops the thread (a pending trim is skipped: the process is going away).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace sdx::serve {

class Metric;

class MemoryTrimmer {
 public:
  // mallopt(M_MMAP_THRESHOLD, mmap_threshold) and mallopt(M_TRIM_THRESHOLD, trim_threshold) (fixed: glibc's
  // dynamic raising off), unless the environment sets either; false when nothing was changed. Process-wide:
  // call once at server start, before the threads (sdx serve's RemoteService::start_reaper does).
  static bool fix_malloc_thresholds(int mmap_threshold = 1 << 20, int trim_threshold = 1 << 20);

  explicit MemoryTrimmer(Metric* seconds);  // seconds: may be null (not observed)
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  void request();
  // Trims done so far (for tests).
  uint64_t trims() const;

 private:
  void loop();

  Metric* const seconds_;
  mutable std::mutex mutex_;  // guards pending_, stop_, trims_
  std::condition_variable wake_;
  bool pending_ = false, stop_ = false;
  uint64_t trims_ = 0;
  std::thread thread_;
};

}  // namespace sdx::serve
