#include "backend/cpu/threading/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#define SDX_POOL_AFFINITY 1
#endif

#include "backend/cpu/threading/cpu_affinity.h"

namespace sdx::cpu {
namespace {

// Pause iterations a worker spins before sleeping (about 0.2-0.5 ms on current x86).
constexpr int kSpinIterations = 8192;
constexpr uint64_t kCountMask = 0xffff;
// A spinning worker checks whether it shares the caller's CPU every this many pause iterations.
constexpr int kColocationCheckEvery = 256;

// CPU contention: more runnable threads than CPUs (another process spinning on the other core). Workers
// spinning between regions then take CPU time from the caller, and a caller spinning on a chunk held by a
// worker the scheduler took off its CPU takes it from that worker: the pool loses to no pool at all.
// Each worker samples its involuntary context switches (getrusage) every kWatchEveryNs after a job;
// kContendedSwitches or more in one sample mark the process contended for kContendedNs. Meanwhile
// workers spin kContendedSpin pause iterations only before they sleep, and a caller waiting for a chunk
// yields its CPU. Short enough that an idle machine gets the spinning back within 50 ms. Measured with
// bench/corun.py (bench/README.md, "Co-running load"). The mark is a hint shared by the pools of the
// process (the condition is the machine's): relaxed loads and stores, it publishes no data.
constexpr int64_t kWatchEveryNs = 10'000'000;
constexpr long kContendedSwitches = 2;
constexpr int64_t kContendedNs = 50'000'000;
constexpr int kContendedSpin = 64;
std::atomic<int64_t> g_contended_until_ns{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
bool contended() { return now_ns() < g_contended_until_ns.load(std::memory_order_relaxed); }

// A worker's last sample of its involuntary context switches.
struct PreemptionWatch {
  int64_t last_ns = 0;
  long last_switches = -1;
};

void watch_preemption(PreemptionWatch* w) {
  const int64_t t = now_ns();
  if (t - w->last_ns < kWatchEveryNs) return;
#if defined(RUSAGE_THREAD)
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return;
  if (w->last_switches >= 0 && ru.ru_nivcsw - w->last_switches >= kContendedSwitches)
    g_contended_until_ns.store(t + kContendedNs, std::memory_order_relaxed);
  w->last_switches = ru.ru_nivcsw;
#endif
  w->last_ns = t;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

thread_local ThreadPool* t_pool = nullptr;

}  // namespace

int ThreadPool::default_num_threads() {
  // Count distinct core ids per package from sysfs; fall back to the logical count.
  const unsigned logical = std::max(1u, std::thread::hardware_concurrency());
  std::set<std::string> cores;
  for (unsigned cpu = 0; cpu < logical; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
    std::string p, c;
    if (!(pkg >> p) || !(core >> c)) return static_cast<int>(logical);
    cores.insert(p + ":" + c);
  }
  return std::max(1, static_cast<int>(cores.size()));
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = default_num_threads();
  num_threads = std::min(num_threads, static_cast<int>(kCountMask));
  cpus_ = allowed_cpus();
  tids_ = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(num_threads));
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i - 1); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  wake_sleepers();
  for (auto& t : workers_) t.join();
}

void ThreadPool::wake_sleepers() {
  { std::lock_guard<std::mutex> lock(sleep_mutex_); }
  sleep_cv_.notify_all();
}

void ThreadPool::avoid_caller_cpu() {
  const int caller = caller_cpu_.load(std::memory_order_relaxed);
  if (caller < 0 || current_cpu() != caller) return;
  // Nowhere else to go (the pool may use one CPU only): it stays, sharing it.
  if (move_off_cpu(caller, cpus_)) colocation_moves_.fetch_add(1, std::memory_order_relaxed);
}

bool ThreadPool::place_workers_for_testing(int cpu) {
#if SDX_POOL_AFFINITY
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  for (size_t i = 0; i < workers_.size(); ++i) {
    int tid = 0;
    // acquire: pairs with the worker's release store of its id.
    while ((tid = tids_[i].load(std::memory_order_acquire)) == 0) std::this_thread::yield();
    if (sched_setaffinity(tid, sizeof set, &set) != 0) return false;
  }
  return true;
#else
  (void)cpu;
  return false;
#endif
}

void ThreadPool::run_chunks() {
  uint64_t w = work_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t chunks = (w >> 16) & kCountMask;
    const uint64_t next = w & kCountMask;
    if (next >= chunks) return;
    // acquire: pairs with the caller's release store of work_, making fn_/ctx_/n_/chunk_
    // of this generation visible. The caller rewrites them only after every chunk of this
    // generation is done, which cannot happen before this claimed chunk finishes.
    if (!work_.compare_exchange_weak(w, w + 1, std::memory_order_acquire, std::memory_order_relaxed)) continue;
    const int64_t begin = static_cast<int64_t>(next) * chunk_;
    const int64_t end = std::min(n_, begin + chunk_);
    fn_(ctx_, begin, end);
    // release: publishes this chunk's writes to the caller's acquire load of done_.
    done_.fetch_add(1, std::memory_order_release);
    w = work_.load(std::memory_order_relaxed);
  }
}

void ThreadPool::worker_loop(int index) {
#if SDX_POOL_AFFINITY
  // release: publishes the id to place_workers_for_testing's acquire load (nothing else depends on it).
  tids_[static_cast<size_t>(index)].store(static_cast<int>(gettid()), std::memory_order_release);
#else
  (void)index;
#endif
  // wake_'s value when the pool was built, not when this thread got to run: a thread that starts
  // late must still notice the jobs (and the shutdown) published since.
  uint32_t seen = 0;
  PreemptionWatch watch;
  for (;;) {
    uint32_t now = wake_.load(std::memory_order_acquire);
    const int spins = contended() ? kContendedSpin : kSpinIterations;
    for (int i = 0; now == seen && i < spins; ++i) {
      cpu_relax();
      // Spinning on the caller's CPU takes time from the caller that the pool exists to save.
      if (i % kColocationCheckEvery == kColocationCheckEvery - 1) avoid_caller_cpu();
      now = wake_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      // Re-check after announcing the sleep: a caller that saw sleepers_ == 0 made its wake_ bump
      // before our increment (both seq_cst), so we see it here; one that saw us takes the mutex
      // before notifying, so it cannot notify between this check and the wait.
      now = wake_.load(std::memory_order_seq_cst);
      while (now == seen) {
        sleep_cv_.wait(lock);
        now = wake_.load(std::memory_order_acquire);
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    // The kernel may have woken this thread onto the caller's CPU (a few ns when it has not).
    avoid_caller_cpu();
    run_chunks();
    watch_preemption(&watch);
  }
}

void ThreadPool::run(int64_t n, int64_t grain, void (*fn)(void*, int64_t, int64_t), void* ctx) {
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_chunks = std::min<int64_t>(num_threads(), n / grain);
  if (max_chunks <= 1 || busy_.test_and_set(std::memory_order_acquire)) {
    fn(ctx, 0, n);
    return;
  }
  caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
  const int64_t chunk = (n + max_chunks - 1) / max_chunks;
  const uint64_t chunks = static_cast<uint64_t>((n + chunk - 1) / chunk);
  fn_ = fn;
  ctx_ = ctx;
  n_ = n;
  chunk_ = chunk;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t generation = (work_.load(std::memory_order_relaxed) >> 32) + 1;
  // release: publishes the job fields above to workers claiming with an acquire CAS.
  work_.store((generation << 32) | (chunks << 16), std::memory_order_release);
  // seq_cst with the sleepers_ check: a worker either sees this bump or is counted and woken.
  wake_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_sleepers();
  run_chunks();
  // acquire: pairs with each chunk's release increment, so their writes are visible. Under contention
  // the caller yields while it waits: the chunk it waits for may be on a worker that needs the CPU.
  for (int i = 1; done_.load(std::memory_order_acquire) < chunks; ++i) {
    cpu_relax();
    if (i % kColocationCheckEvery == 0 && contended()) std::this_thread::yield();
  }
  // release: the next thread to take the pool sees this job finished.
  busy_.clear(std::memory_order_release);
}

ThreadPool* current_thread_pool() { return t_pool; }

int current_num_threads() { return t_pool ? t_pool->num_threads() : 1; }

ScopedThreadPool::ScopedThreadPool(ThreadPool* pool) : previous_(t_pool) { t_pool = pool; }
ScopedThreadPool::~ScopedThreadPool() { t_pool = previous_; }

}  // namespace sdx::cpu
