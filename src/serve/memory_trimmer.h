// Gives freed heap memory back to the OS after sdx.v1 sessions end: glibc keeps large freed chunks in its
// arenas (its mmap threshold rises the first time a large mmapped block is freed), so the bytes of a
// session's refs would stay in the server's RSS after the refs are freed. malloc_trim(0) returns the free
// pages of every arena (madvise), and it runs here, on a thread of its own, never on a request's path.
//
//   serve::MemoryTrimmer trimmer(metrics->remote()->malloc_trim);   // a histogram of each trim's seconds
//   refs.drop_session(id);
//   trimmer.request();          // returns at once; the thread trims soon after (requests coalesce)
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
