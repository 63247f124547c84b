// JitEngine: one per session. Turns SegmentIRs into loaded kernels: C++ source (cpp_emitter.h),
// looked up in the disk cache (disk_cache.h), else compiled by the system compiler on one
// background thread, so no call ever waits for a compiler.
//
//   JitEngine jit(options.jit);
//   std::shared_ptr<CompiledSegment> c = jit.request(ir);   // at freeze (end of warmup)
//   ... c->state(): READY at once on a disk-cache hit, else PENDING until the worker is done ...
//
// request() answers a disk-cache hit synchronously (a manifest read, the library hashed and
// checked against it, a dlopen; no compiler runs when the compiler's version line is cached too),
// so a warm process swaps the kernels in at capture. Everything else (running `--version`,
// compiling) happens on the worker. Identical sources share one CompiledSegment.
//
// The first request checks the cache folder (DiskCache::ensure_dir). A refused folder (another
// user's, or writable by others: backend/cpu/jit/cache_permissions.h) turns the JIT off for this engine: every
// request FAILS with the reason (sdx inspect --jit shows it, diagnostics record
// DISK_CACHE_REFUSED), a warning goes to stderr once per process and folder, and the unfused
// kernels run. A corrupt cache entry is deleted and compiled again (DISK_CACHE_REBUILT).
//
// Lifetime: the destructor sets the cancel flag, which kills a running compiler child, and joins
// the worker; CompiledSegments (and their libraries) stay valid for whoever still holds them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "backend/cpu/jit/compiled_segment.h"
#include "backend/cpu/jit/disk_cache.h"
#include "backend/cpu/jit/jit_options.h"

namespace sdx::jit {

struct JitStats {
  int64_t requests = 0;          // distinct segment sources requested
  int64_t disk_cache_hits = 0;   // loaded from the disk cache
  int64_t compiled = 0;          // compiled and loaded
  int64_t failed = 0;            // could not be compiled or loaded
  int64_t compiler_runs = 0;     // compiler processes started (compiles and --version queries)
  int64_t rebuilt = 0;           // corrupt disk-cache entries deleted (and compiled again)
};

class JitEngine {
 public:
  explicit JitEngine(JitOptions options);
  ~JitEngine();
  JitEngine(const JitEngine&) = delete;
  JitEngine& operator=(const JitEngine&) = delete;

  const JitOptions& options() const { return options_; }
  const DiskCache& cache() const { return cache_; }

  std::shared_ptr<CompiledSegment> request(const SegmentIR& ir);
  // Waits until no request is pending (true) or timeout_s passed (false).
  bool wait_idle(double timeout_s);
  JitStats stats() const;

 private:
  struct CompilerId {
    Status status;                // why there is no usable compiler
    std::string path, version;   // valid when status is OK and version is non-empty
  };
  // The compiler and, when known without running it (resolved before, or cached), its version.
  CompilerId compiler_id(bool may_run);
  // The cache folder, created and checked once (the first request): OK, or why it is refused.
  Status cache_ready();
  // Looks `c` up in the disk cache and loads it: true when it is now READY.
  bool try_disk_cache(CompiledSegment& c, const CompilerId& id);
  void resolve(CompiledSegment& c);  // worker: cache, else compile; publishes READY or FAILED
  void worker_loop();

  const JitOptions options_;
  const DiskCache cache_;
  std::once_flag cache_checked_;
  Status cache_status_;  // written once inside call_once(cache_checked_), read after it
  std::atomic<bool> cancel_{false};  // set once by the destructor; read by run_process (acquire)

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_, idle_;
  std::deque<std::shared_ptr<CompiledSegment>> queue_;
  bool busy_ = false;
  std::thread worker_;
  std::unordered_map<uint64_t, std::shared_ptr<CompiledSegment>> by_source_;
  bool compiler_resolved_ = false;
  CompilerId compiler_;
  JitStats stats_;
};

}  // namespace sdx::jit
