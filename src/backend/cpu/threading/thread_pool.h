// ThreadPool: the one intra-op thread pool of a session.
//
// Kernels split work with cpu::parallel_for, which runs on the pool the calling thread
// is bound to (ScopedThreadPool, set by Session::run around every call), or inline when
// there is none:
//
//   cpu::parallel_for(rows, /*grain=*/16, [&](int64_t begin, int64_t end) {
//     for (int64_t r = begin; r < end; ++r) normalize_row(r);
//   });
//
// The range [0, n) is cut into at most num_threads() contiguous chunks of at least
// `grain` items; the caller runs chunks itself and the workers claim the rest, so a
// worker that is slow to wake never delays the call by more than its own chunk.
// Workers spin briefly between calls (regions follow each other within microseconds
// during a run), then sleep on a futex. parallel_for never allocates.
//
// Colocation (Linux): the scheduler sometimes wakes a worker onto the CPU of the thread
// calling run() (on a VM it may count an idle vCPU as busy) and leaves it there for tens of
// milliseconds. The two then share one CPU: the caller ends up running every chunk itself
// while the spinning worker takes half its time, slower than no pool at all. A worker that
// finds itself on the last caller's CPU narrows its own affinity to the CPUs it started
// with minus that one, which moves it at once; it never leaves the CPUs it started with.
//
// Nesting and sharing: a parallel_for issued from inside a chunk, or while another
// thread is using the same pool, runs inline on the calling thread. Libraries with
// their own threads (OpenBLAS, oneDNN) are called single-threaded from inside chunks, so
// the machine is never oversubscribed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace sdx::cpu {

class ThreadPool {
 public:
  // num_threads counts the caller: a pool of N threads starts N - 1 workers. <= 0 means
  // default_num_threads().
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Physical cores of this machine (hyperthread siblings counted once), at least 1.
  static int default_num_threads();

  // Calls fn(ctx, begin, end) over [0, n) in chunks; returns when every chunk is done.
  void run(int64_t n, int64_t grain, void (*fn)(void*, int64_t, int64_t), void* ctx);

  // Times a worker moved itself off the caller's CPU (see "Colocation" above).
  uint32_t colocation_moves() const { return colocation_moves_.load(std::memory_order_relaxed); }
  // Testing: restricts every worker to `cpu`, as the scheduler might place them; false where thread
  // affinity is not supported here.
  bool place_workers_for_testing(int cpu);

 private:
  void worker_loop(int index);
  // Claims and runs chunks of the job published in work_; returns when none is left.
  void run_chunks();
  void wake_sleepers();
  // Moves the calling worker off the caller's CPU when it is on it (see "Colocation").
  void avoid_caller_cpu();

  // The job. Written by the caller only while no chunk of the previous job can still be
  // claimed; published to workers by the release store of work_ (see run()).
  void (*fn_)(void*, int64_t, int64_t) = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 0;
  // [generation:32 | chunks:16 | next chunk:16]. A worker claims a chunk with an acquire
  // CAS, which makes the job fields above visible.
  std::atomic<uint64_t> work_{0};
  // Chunks finished; each finisher adds with release, the caller reads with acquire, so
  // everything the chunks wrote is visible when run() returns.
  std::atomic<uint32_t> done_{0};
  // Bumped for every job (and at shutdown) so workers notice it; idle workers spin on it, then sleep
  // on sleep_cv_ after counting themselves in sleepers_.
  std::atomic<uint32_t> wake_{0};
  std::atomic<int> sleepers_{0};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::atomic<bool> stop_{false};
  // The CPU of the thread that last entered run(), -1 before any. A hint for avoid_caller_cpu(): it
  // publishes no other data, so relaxed loads and stores suffice.
  std::atomic<int> caller_cpu_{-1};
  std::atomic<uint32_t> colocation_moves_{0};
  // The CPUs the constructing thread (so every worker) may run on; empty where unknown.
  std::vector<int> cpus_;
  // Each worker's kernel thread id, stored by the worker as it starts (0 until then); for testing.
  std::unique_ptr<std::atomic<int>[]> tids_;
  // Held (acquire/release) by the thread inside run(); others run inline.
  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
  std::vector<std::thread> workers_;
};

// The pool this thread's parallel_for uses (null: run inline).
ThreadPool* current_thread_pool();
// Threads parallel_for may use on this thread right now (1 without a pool).
int current_num_threads();

// Binds the calling thread to `pool` (may be null) for the scope's lifetime.
class ScopedThreadPool {
 public:
  explicit ScopedThreadPool(ThreadPool* pool);
  ~ScopedThreadPool();
  ScopedThreadPool(const ScopedThreadPool&) = delete;
  ScopedThreadPool& operator=(const ScopedThreadPool&) = delete;

 private:
  ThreadPool* previous_;
};

template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  ThreadPool* pool = current_thread_pool();
  if (pool == nullptr || n <= grain) {
    fn(int64_t{0}, n);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  pool->run(
      n, grain, [](void* c, int64_t b, int64_t e) { (*static_cast<Fn*>(c))(b, e); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace sdx::cpu
