#include "obs/timing_report.h"

#include <gtest/gtest.h>

#include <string>

namespace sdx::obs {
namespace {

std::vector<OpStats> sample() {
  OpTimingTracker t;
  t.set_mode(TimingMode::kTrace);
  OpTiming a;
  a.op = intern_name("MatMul");
  a.node = intern_name("layer \"0\"/mm");  // quotes must be escaped in JSON
  a.start_ns = 1'000'000;
  a.phase_ns[static_cast<int>(TimingPhase::kShapeCalc)] = 200;
  a.phase_ns[static_cast<int>(TimingPhase::kKernelExec)] = 1800;
  a.phase_ns[static_cast<int>(TimingPhase::kTotal)] = 2000;
  t.record(a);
  OpTiming b = a;
  b.op = intern_name("Relu");
  b.start_ns = 1'003'000;
  b.phase_ns[static_cast<int>(TimingPhase::kTotal)] = 500;
  t.record(b);
  t.flush();
  return t.op_stats();
}

TEST(TimingReport, HotspotTableRanksByTotal) {
  const std::string s = format_hotspots(sample(), 10);
  EXPECT_NE(s.find("=== Op Timing Hotspots (Top 2) ==="), std::string::npos) << s;
  EXPECT_NE(s.find("Rank  Op Name"), std::string::npos) << s;
  EXPECT_LT(s.find("MatMul"), s.find("Relu")) << s;
}

TEST(TimingReport, BreakdownAndHistogramName) {
  auto st = sample();
  const std::string b = format_breakdown(st[0]);
  EXPECT_NE(b.find("SHAPE_CALC"), std::string::npos) << b;
  EXPECT_NE(b.find("KERNEL_EXEC"), std::string::npos) << b;
  const std::string h = format_histogram(st[0]);
  EXPECT_NE(h.find("1.024 - 2.048 us"), std::string::npos) << h;  // 2000 ns lands in [1024, 2048)
}

TEST(TimingReport, CsvHasTheDspColumns) {
  const std::string csv = timing_csv(sample());
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(header,
            "OpName,Calls,TotalMs,AvgUs,StdDevUs,MinUs,MaxUs,ValidationMs,ShapeCalcMs,MemoryAllocMs,KernelSelectMs,"
            "KernelExecMs,P50Us,P90Us,P99Us");
  EXPECT_NE(csv.find("\nMatMul,1,0.002000,2.000,"), std::string::npos) << csv;
}

TEST(TimingReport, ChromeTraceHasOneCompleteEventPerExecution) {
  OpTimingTracker t;
  t.set_mode(TimingMode::kTrace);
  OpTiming a;
  a.op = intern_name("Add");
  a.node = intern_name("n\"1");
  for (int i = 0; i < 3; ++i) {
    a.start_ns = 5000 + 1000 * static_cast<uint64_t>(i);
    a.phase_ns[static_cast<int>(TimingPhase::kTotal)] = 700;
    t.record(a);
  }
  t.flush();
  const std::string j = chrome_trace_json(t.trace());
  size_t events = 0;
  for (size_t p = j.find("\"ph\":\"X\""); p != std::string::npos; p = j.find("\"ph\":\"X\"", p + 1)) ++events;
  EXPECT_EQ(events, 3u);
  EXPECT_NE(j.find("\"node\":\"n\\\"1\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"ts\":2.000,\"dur\":0.700"), std::string::npos) << j;  // relative to the first event
  EXPECT_EQ(j.substr(0, 15), "{\"traceEvents\":");
}

TEST(TimingReport, WritingToAnUnwritablePathIsAnError) {
  Status s = write_timing_csv("/nonexistent-dir/x.csv", sample());
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/x.csv"), std::string::npos);
}

}  // namespace
}  // namespace sdx::obs
