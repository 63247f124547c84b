// Diagnostics (the DSP document's DspDiagnostics): structured records of what the engine decided and why,
// by category, at three levels, reported as JSON.
//
//   auto& d = obs::Diagnostics::global();
//   d.enable(obs::DiagCategory::kFallback, obs::DiagLevel::kDetailed);
//   ... run ...
//   std::string json = d.to_json();
//
// Categories are the DSP document's (COMPILE, EXECUTE, MEMORY, GRAPH_REPLAY, JIT, OPTIMIZER, CACHE,
// WARMUP, CAPTURE, LIVENESS, WIRING, SHAPES, GAPS, TENSOR_PARALLEL, PIPELINE_PARALLEL, SLOT_STATE,
// FALLBACK, STREAM, POINTER, LATENCY, COLORING). Each event is recorded at a level: SUMMARY events are
// counted (per category and event name, with the last detail kept); a category enabled at DETAILED also
// keeps each event's detail (up to kMaxEventsPerCategory, then counted as dropped); FULL keeps the events
// that are recorded only at FULL too (per-call ones).
//
// Environment (read once, by global()): SDX_DIAGNOSTICS_ENABLED=1 turns it on for
// SDX_DIAGNOSTICS_CATEGORIES (comma-separated names, default all) at SDX_DIAGNOSTICS_LEVEL (SUMMARY,
// DETAILED or FULL; default SUMMARY); SDX_DIAGNOSTICS_JSON_OUTPUT=FILE writes the report at process exit.
//
// Recording checks enabled() first, a relaxed load: call sites do so before building any detail string.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sdx::obs {

enum class DiagCategory : uint8_t {
  kCompile, kExecute, kMemory, kGraphReplay, kJit, kOptimizer, kCache, kWarmup, kCapture, kLiveness, kWiring,
  kShapes, kGaps, kTensorParallel, kPipelineParallel, kSlotState, kFallback, kStream, kPointer, kLatency, kColoring,
};
inline constexpr int kNumDiagCategories = 21;
const char* diag_category_name(DiagCategory c);  // "FALLBACK"
bool parse_diag_category(std::string_view name, DiagCategory* out);

// kOff < kSummary < kDetailed < kFull.
enum class DiagLevel : uint8_t { kOff = 0, kSummary = 1, kDetailed = 2, kFull = 3 };
const char* diag_level_name(DiagLevel l);
bool parse_diag_level(std::string_view name, DiagLevel* out);

struct DiagEvent {
  DiagCategory category;
  DiagLevel level;
  std::string name;    // "NEW_SHAPE_SIGNATURE", "JIT_FAILED", ...
  std::string detail;  // human-readable, with the reason
  uint64_t time_ns;    // steady_clock
};

class Diagnostics {
 public:
  static constexpr size_t kMaxEventsPerCategory = 10000;

  Diagnostics() = default;
  Diagnostics(const Diagnostics&) = delete;
  Diagnostics& operator=(const Diagnostics&) = delete;

  // The process-wide instance every session reports into (configured from SDX_DIAGNOSTICS_*).
  static Diagnostics& global();

  void enable(DiagCategory c, DiagLevel l) { levels_[static_cast<int>(c)].store(static_cast<uint8_t>(l), std::memory_order_relaxed); }
  void enable_all(DiagLevel l);
  void disable(DiagCategory c) { enable(c, DiagLevel::kOff); }
  DiagLevel level(DiagCategory c) const {
    return static_cast<DiagLevel>(levels_[static_cast<int>(c)].load(std::memory_order_relaxed));
  }
  // Whether an event recorded at `at` in category `c` would be kept (or counted).
  bool enabled(DiagCategory c, DiagLevel at = DiagLevel::kSummary) const {
    return static_cast<uint8_t>(at) <= levels_[static_cast<int>(c)].load(std::memory_order_relaxed) &&
           levels_[static_cast<int>(c)].load(std::memory_order_relaxed) != 0;
  }

  // Records an event of `c` that matters at level `at` (SUMMARY: a decision, DETAILED: its particulars,
  // FULL: per-call chatter). Ignored unless enabled(c, at).
  void record(DiagCategory c, DiagLevel at, std::string_view name, std::string detail);
  // The same, building the detail (detail() -> std::string) only when it will be kept.
  template <typename F>
  void record_lazy(DiagCategory c, DiagLevel at, std::string_view name, F&& detail) {
    if (enabled(c, at)) record(c, at, name, detail());
  }

  // {"enabled": ..., "categories": {"FALLBACK": {"level": ..., "counts": {...}, "last": {...},
  // "events": [...], "dropped": n}, ...}} with the categories that are enabled or have records.
  std::string to_json() const;
  Status write_json(const std::string& path) const;
  std::vector<DiagEvent> events(DiagCategory c) const;
  uint64_t count(DiagCategory c, std::string_view name) const;
  void reset();

 private:
  std::atomic<uint8_t> levels_[kNumDiagCategories] = {};
  mutable std::mutex mutex_;
  struct PerCategory {
    std::map<std::string, uint64_t> counts;
    std::map<std::string, std::string> last;  // the last detail per event name
    std::vector<DiagEvent> events;
    uint64_t dropped = 0;
  };
  PerCategory per_[kNumDiagCategories];
};

}  // namespace sdx::obs
