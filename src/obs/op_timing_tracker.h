// OpTimingTracker (the DSP document's Op Execution Timing Tracker, ADR 0092): low-overhead timing of
// every op sdx executes, in replay and slot by slot alike.
//
//   auto& t = obs::OpTimingTracker::global();
//   t.set_mode(obs::TimingMode::kSimple);       // or SDX_OP_TIMING=simple|detailed|trace
//   ... run the model ...
//   t.flush();                                  // drain the per-thread rings into the statistics
//   std::cout << obs::format_hotspots(t.op_stats(), 20);
//
// Modes: DISABLED (one relaxed load per op, see observers.h), SIMPLE (TOTAL per execution), DETAILED
// (also the phases VALIDATION, SHAPE_CALC, MEMORY_ALLOC, KERNEL_SELECT, KERNEL_EXEC) and TRACE
// (detailed, and every execution kept for a Chrome trace, up to kMaxTraceEvents).
//
// Recording: each thread writes into its own ring of kRingEntries entries, lock-free. The writer fills
// an entry, then publishes it with a release store of the entry's sequence number and of the ring's
// head; flush() reads the head and each entry's sequence with acquire loads (a seqlock: an entry the
// writer overwrote while it was being read fails the second sequence check). Entries overwritten before
// a flush read them are counted (overwritten()) and reported, never aggregated as garbage. Flush often
// enough (every 8192 ops per thread) to lose none.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "obs/timing_histogram.h"

namespace sdx::obs {

struct TimingRing;  // one thread's ring (op_timing_tracker.cc)

enum class TimingMode : uint8_t { kDisabled = 0, kSimple = 1, kDetailed = 2, kTrace = 3 };
const char* timing_mode_name(TimingMode m);
// "disabled"/"off"/"0", "simple"/"1", "detailed"/"2", "trace"/"3" (case-insensitive); false otherwise.
bool parse_timing_mode(std::string_view text, TimingMode* out);

enum class TimingPhase : uint8_t { kValidation, kShapeCalc, kMemoryAlloc, kKernelSelect, kKernelExec, kTotal };
inline constexpr int kNumTimingPhases = 6;
const char* timing_phase_name(TimingPhase p);  // "VALIDATION", ..., "TOTAL"

// The clock of every record: steady_clock in ns.
inline uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}
// A duration in ns as a record field (saturates at about 4.3 s).
inline uint32_t clamp_ns(uint64_t ns) { return ns > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(ns); }

// A stable pointer to a copy of `name` (kept for the life of the process), for records that may be
// read after the graph that named them is gone. Interning takes a lock: do it when binding, not per op.
const char* intern_name(std::string_view name);

// One execution of one op, as the executor reports it.
struct OpTiming {
  const char* op = nullptr;    // interned op type, e.g. "MatMul"
  const char* node = nullptr;  // interned node name (may be "")
  uint64_t start_ns = 0;       // steady_clock, ns
  uint32_t phase_ns[kNumTimingPhases] = {};  // kTotal always; the others in DETAILED and TRACE
};

struct OpStats {
  std::string op;
  uint64_t calls = 0;
  double total_ns = 0, mean_ns = 0, stddev_ns = 0, min_ns = 0, max_ns = 0;
  double phase_total_ns[kNumTimingPhases] = {};
  TimingHistogram histogram;
  double p50_ns = 0, p90_ns = 0, p99_ns = 0;
};

struct ThreadStats {
  int thread = 0;  // ring index, in order of each thread's first record
  uint64_t calls = 0;
  double total_ns = 0;
  uint64_t overwritten = 0;
};

struct TraceEvent {
  const char* op = nullptr;
  const char* node = nullptr;
  int thread = 0;
  uint64_t start_ns = 0;
  uint32_t phase_ns[kNumTimingPhases] = {};
};

class OpTimingTracker {
 public:
  static constexpr uint64_t kRingEntries = 8192;
  static constexpr size_t kMaxTraceEvents = size_t{1} << 22;

  OpTimingTracker();
  ~OpTimingTracker();
  OpTimingTracker(const OpTimingTracker&) = delete;
  OpTimingTracker& operator=(const OpTimingTracker&) = delete;

  // The tracker the executors report into (its mode starts from SDX_OP_TIMING).
  static OpTimingTracker& global();

  void set_mode(TimingMode m);
  TimingMode mode() const { return mode_.load(std::memory_order_relaxed); }

  // Appends to the calling thread's ring. Lock-free except the first call on a thread (which
  // registers its ring).
  void record(const OpTiming& t);

  // Drains every ring into the statistics (and, when the mode is TRACE at the time of the flush, into
  // the trace). Safe while writers run.
  void flush();
  // Forgets statistics, trace and counters (rings keep their threads).
  void reset();

  std::vector<OpStats> op_stats() const;          // by total time, largest first
  std::vector<ThreadStats> thread_stats() const;  // by thread index
  std::vector<TraceEvent> trace() const;          // in flush order, per thread in execution order
  uint64_t recorded() const;                      // executions aggregated since reset()
  uint64_t overwritten() const;                   // executions lost to ring overwrite since reset()
  uint64_t trace_dropped() const;                 // executions beyond kMaxTraceEvents

 private:
  TimingRing* ring_for_this_thread();
  void drain(TimingRing& r);  // under mutex_

  const uint64_t id_;
  std::atomic<TimingMode> mode_{TimingMode::kDisabled};
  mutable std::mutex mutex_;  // rings_ (registration), the aggregates and the trace
  std::vector<std::shared_ptr<TimingRing>> rings_;
  struct Aggregate {
    uint64_t calls = 0;
    double total = 0, sum_sq = 0, min = 0, max = 0;
    double phase[kNumTimingPhases] = {};
    TimingHistogram histogram;
  };
  std::unordered_map<const char*, Aggregate> per_op_;
  std::vector<ThreadStats> per_thread_;
  std::vector<TraceEvent> trace_;
  uint64_t recorded_ = 0, overwritten_ = 0, trace_dropped_ = 0;
};

}  // namespace sdx::obs
