#include "obs/timing_report.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "obs/json_escape.h"

namespace sdx::obs {
namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

Status write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error(std::string("cannot write the ") + what + " to '" + path + "': " + std::strerror(errno));
  out << text;
  out.close();
  if (!out) return io_error(std::string("writing the ") + what + " to '" + path + "' failed");
  return Status::ok();
}

constexpr int kPhasesBeforeTotal = kNumTimingPhases - 1;

}  // namespace

std::string format_hotspots(const std::vector<OpStats>& stats, int top) {
  double all = 0;
  for (const OpStats& s : stats) all += s.total_ns;
  const int n = std::min<int>(top, static_cast<int>(stats.size()));
  std::string out = fmt("=== Op Timing Hotspots (Top %d) ===\n", n);
  out += fmt("%-5s %-24s %9s %13s %11s %11s %11s %11s %7s\n", "Rank", "Op Name", "Calls", "Total(ms)", "Avg(us)",
             "StdDev(us)", "P50(us)", "P99(us)", "Share%");
  for (int i = 0; i < n; ++i) {
    const OpStats& s = stats[static_cast<size_t>(i)];
    out += fmt("%4d  %-24.24s %9llu %13.3f %11.2f %11.2f %11.2f %11.2f %6.1f%%\n", i + 1, s.op.c_str(),
               static_cast<unsigned long long>(s.calls), s.total_ns / 1e6, s.mean_ns / 1e3, s.stddev_ns / 1e3,
               s.p50_ns / 1e3, s.p99_ns / 1e3, all > 0 ? 100.0 * s.total_ns / all : 0.0);
  }
  return out;
}

std::string format_breakdown(const OpStats& s) {
  std::string out = fmt("=== Phase breakdown: %s (%llu calls) ===\n", s.op.c_str(), static_cast<unsigned long long>(s.calls));
  out += fmt("%-14s %13s %11s %8s\n", "Phase", "Total(ms)", "Avg(us)", "Share%");
  const double total = s.phase_total_ns[static_cast<int>(TimingPhase::kTotal)];
  double phased = 0;
  for (int p = 0; p < kNumTimingPhases; ++p) {
    const double t = s.phase_total_ns[p];
    if (p < kPhasesBeforeTotal) phased += t;
    out += fmt("%-14s %13.3f %11.2f %7.1f%%\n", timing_phase_name(static_cast<TimingPhase>(p)), t / 1e6,
               s.calls ? t / 1e3 / static_cast<double>(s.calls) : 0.0, total > 0 ? 100.0 * t / total : 0.0);
  }
  if (phased == 0 && total > 0) out += "(no phases recorded: use the detailed or trace mode)\n";
  return out;
}

std::string format_histogram(const OpStats& s) {
  std::string out = fmt("=== Histogram: %s (%llu calls; p50 %.2f us, p90 %.2f us, p99 %.2f us) ===\n", s.op.c_str(),
                        static_cast<unsigned long long>(s.calls), s.p50_ns / 1e3, s.p90_ns / 1e3, s.p99_ns / 1e3);
  uint64_t most = 0;
  for (int b = 0; b < TimingHistogram::kBuckets; ++b) most = std::max(most, s.histogram.count(b));
  for (int b = 0; b < TimingHistogram::kBuckets; ++b) {
    const uint64_t c = s.histogram.count(b);
    if (c == 0) continue;
    const double lo = TimingHistogram::lower_edge(b) / 1e3;
    std::string range = b + 1 == TimingHistogram::kBuckets ? fmt(">= %.3f us", lo)
                                                           : fmt("%.3f - %.3f us", lo, TimingHistogram::upper_edge(b) / 1e3);
    const int bar = most ? static_cast<int>(40.0 * static_cast<double>(c) / static_cast<double>(most) + 0.5) : 0;
    out += fmt("%-26s %10llu  %s\n", range.c_str(), static_cast<unsigned long long>(c), std::string(static_cast<size_t>(bar), '#').c_str());
  }
  return out;
}

std::string format_thread_stats(const std::vector<ThreadStats>& threads) {
  std::string out = "=== Per-thread timing ===\n";
  out += fmt("%-7s %10s %13s %12s\n", "Thread", "Calls", "Total(ms)", "Overwritten");
  for (const ThreadStats& t : threads)
    out += fmt("%-7d %10llu %13.3f %12llu\n", t.thread, static_cast<unsigned long long>(t.calls), t.total_ns / 1e6,
               static_cast<unsigned long long>(t.overwritten));
  return out;
}

const char* const kTimingCsvColumns[] = {"OpName",        "Calls",       "TotalMs",     "AvgUs",       "StdDevUs",
                                         "MinUs",         "MaxUs",       "ValidationMs", "ShapeCalcMs", "MemoryAllocMs",
                                         "KernelSelectMs", "KernelExecMs", "P50Us",       "P90Us",       "P99Us"};
const int kNumTimingCsvColumns = static_cast<int>(sizeof(kTimingCsvColumns) / sizeof(kTimingCsvColumns[0]));

std::string timing_csv(const std::vector<OpStats>& stats) {
  std::string out;
  for (int c = 0; c < kNumTimingCsvColumns; ++c) {
    out += kTimingCsvColumns[c];
    out += c + 1 < kNumTimingCsvColumns ? ',' : '\n';
  }
  for (const OpStats& s : stats) {
    // Op types are identifiers; quote anyway if one ever holds a comma or quote.
    std::string name = s.op;
    if (name.find_first_of(",\"\n") != std::string::npos) {
      std::string q = "\"";
      for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      name = q + "\"";
    }
    out += fmt("%s,%llu,%.6f,%.3f,%.3f,%.3f,%.3f", name.c_str(), static_cast<unsigned long long>(s.calls), s.total_ns / 1e6,
               s.mean_ns / 1e3, s.stddev_ns / 1e3, s.min_ns / 1e3, s.max_ns / 1e3);
    for (int p = 0; p < kPhasesBeforeTotal; ++p) out += fmt(",%.6f", s.phase_total_ns[p] / 1e6);
    out += fmt(",%.3f,%.3f,%.3f\n", s.p50_ns / 1e3, s.p90_ns / 1e3, s.p99_ns / 1e3);
  }
  return out;
}

Status write_timing_csv(const std::string& path, const std::vector<OpStats>& stats) {
  return write_file(path, timing_csv(stats), "timing CSV");
}

std::string chrome_trace_json(const std::vector<TraceEvent>& events) {
  uint64_t t0 = UINT64_MAX;
  int max_thread = -1;
  for (const TraceEvent& e : events) {
    t0 = std::min(t0, e.start_ns);
    max_thread = std::max(max_thread, e.thread);
  }
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (int t = 0; t <= max_thread; ++t) {
    sep();
    out += fmt("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"sdx thread %d\"}}", t, t);
  }
  for (const TraceEvent& e : events) {
    sep();
    const double ts = static_cast<double>(e.start_ns - t0) / 1e3;
    const double dur = e.phase_ns[static_cast<int>(TimingPhase::kTotal)] / 1e3;
    out += "{\"name\":\"" + json_escape(e.op ? e.op : "?") + "\",\"cat\":\"op\",\"ph\":\"X\"";
    out += fmt(",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d,\"args\":{\"node\":\"", ts, dur, e.thread);
    out += json_escape(e.node ? e.node : "");
    out += "\"";
    for (int p = 0; p < kPhasesBeforeTotal; ++p)
      if (e.phase_ns[p]) out += fmt(",\"%s_us\":%.3f", timing_phase_name(static_cast<TimingPhase>(p)), e.phase_ns[p] / 1e3);
    out += "}}";
  }
  out += "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"sdx OpTimingTracker\"}}\n";
  return out;
}

Status write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events) {
  return write_file(path, chrome_trace_json(events), "Chrome trace");
}

}  // namespace sdx::obs
