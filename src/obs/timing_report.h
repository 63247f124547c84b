// Reports of OpTimingTracker's statistics: the hotspot table (the DSP example's format), a per-op
// phase breakdown, the histogram and per-thread tables, and exports to CSV and Chrome-trace JSON
// (loadable in Perfetto or chrome://tracing).
//
//   t.flush();
//   std::cout << obs::format_hotspots(t.op_stats(), 20);
//   SDX_RETURN_IF_ERROR(obs::write_chrome_trace("/tmp/trace.json", t.trace()), "");
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "obs/op_timing_tracker.h"

namespace sdx::obs {

// "=== Op Timing Hotspots (Top N) ===" then Rank, Op Name, Calls, Total(ms), Avg(us), StdDev(us),
// P50(us), P99(us), Share% (of all ops' time) for the `top` ops by total time.
std::string format_hotspots(const std::vector<OpStats>& stats, int top);
// Each phase's total, average per call and share of TOTAL for one op (phases are recorded in the
// detailed and trace modes).
std::string format_breakdown(const OpStats& s);
// The 24 buckets with counts and bars.
std::string format_histogram(const OpStats& s);
std::string format_thread_stats(const std::vector<ThreadStats>& threads);

// The CSV columns, in order.
extern const char* const kTimingCsvColumns[];
extern const int kNumTimingCsvColumns;
// One row per op: OpName, Calls, TotalMs, AvgUs, StdDevUs, MinUs, MaxUs, the phase totals
// (ValidationMs, ShapeCalcMs, MemoryAllocMs, KernelSelectMs, KernelExecMs), P50Us, P90Us, P99Us.
std::string timing_csv(const std::vector<OpStats>& stats);
Status write_timing_csv(const std::string& path, const std::vector<OpStats>& stats);

// Chrome trace JSON: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}} with one
// complete ("ph": "X") event per execution: name = op type, cat "op", ts/dur in µs relative to the first
// event, pid 1, tid = thread index, args {node, and each recorded phase in µs}; plus a thread_name
// metadata event per thread.
std::string chrome_trace_json(const std::vector<TraceEvent>& events);
Status write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events);

}  // namespace sdx::obs
