#include "analysis/loop_recorder.h"

#include <gtest/gtest.h>

#include "analysis/loop_monitor.h"

namespace sdx::analysis {
namespace {

Datum scalar(double v) {
  Tensor t = Tensor::allocate(DType::kFloat64, Shape{}).value();
  *t.data<double>() = v;
  return Datum::tensor(t);
}

LoopCondition x_greater_than_zero() {
  LoopCondition c;
  c.form = ConditionForm{"x", Comparison::kGreater, 0};
  c.carried = 0;
  c.depends_on = {0};
  return c;
}

TEST(LoopRecorder, GuardedDivergentLoopNamesTheVariableThatKeepsItGoing) {
  LoopPolicy policy;
  policy.analysis = true;
  const LoopCondition cond = x_greater_than_zero();
  LoopRecorder rec(policy, cond, {"x", "s"}, std::nullopt);
  double x = 1;
  for (int64_t it = 0; it < 100; ++it) {
    x *= 1.1;
    if (rec.wants(it)) rec.record(it, {scalar(x), Datum()}, x > 0);
  }
  LoopReport r = rec.finish("loop0", 100, "max_loop_iterations", 0.5);
  EXPECT_EQ(r.termination.verdict, TerminationVerdict::kWillNotTerminate) << r.describe();
  ASSERT_TRUE(r.termination.root_cause);
  EXPECT_EQ(r.termination.root_cause->name, "x");
  EXPECT_EQ(r.termination.root_cause->evolution.kind, Evolution::kDiverging);
  EXPECT_NEAR(r.termination.root_cause->evolution.rate, 1.1, 1e-6);
  ASSERT_EQ(r.variables.size(), 3u);  // x, s, the condition
  EXPECT_EQ(r.variables[0].evolution.kind, Evolution::kDiverging);
  EXPECT_FALSE(r.variables[1].traced);
  EXPECT_EQ(r.variables[1].note, "not a tensor");
  EXPECT_EQ(r.variables[2].name, "cond");
  EXPECT_EQ(r.variables[2].evolution.kind, Evolution::kStable);
  EXPECT_EQ(r.condition, "x > 0");
  EXPECT_EQ(r.samples, 100);
  EXPECT_NE(r.describe().find("stopped by max_loop_iterations"), std::string::npos) << r.describe();
  EXPECT_NE(r.to_json().find("\"verdict\":\"WILL_NOT_TERMINATE\""), std::string::npos) << r.to_json();
}

TEST(LoopRecorder, GuardedCountdownPredictsTheRemainingIterations) {
  LoopPolicy policy;
  policy.analysis = true;
  policy.stride = 4;
  const LoopCondition cond = x_greater_than_zero();
  LoopRecorder rec(policy, cond, {"x"}, std::nullopt);
  double x = 10000;
  for (int64_t it = 0; it < 1000; ++it) {
    x -= 1;
    if (rec.wants(it)) rec.record(it, {scalar(x)}, x > 0);
  }
  EXPECT_EQ(rec.finish("loop0", 1000, "max_loop_iterations", 0).samples, 250);
  LoopReport r = rec.finish("loop0", 1000, "max_loop_iterations", 0);
  EXPECT_EQ(r.termination.verdict, TerminationVerdict::kTerminates) << r.describe();
  ASSERT_TRUE(r.termination.remaining);
  // The last sample (iteration 996, x = 9003) is 9003 / 1 iterations from 0 at one step per iteration.
  EXPECT_NEAR(static_cast<double>(*r.termination.remaining), 9003, 8) << r.describe();
  EXPECT_EQ(r.termination.bound_by, "condition");
}

TEST(LoopRecorder, ALoopThatEndedIsExact) {
  LoopPolicy policy;
  policy.analysis = true;
  LoopCondition cond;  // nothing known about the condition
  LoopRecorder rec(policy, cond, {"x"}, 20);
  for (int64_t it = 0; it < 20; ++it) rec.record(it, {scalar(3)}, true);
  LoopReport r = rec.finish("loop0", 20, "", 0);
  EXPECT_EQ(r.termination.verdict, TerminationVerdict::kTerminates);
  EXPECT_EQ(r.termination.remaining, 0);
  EXPECT_TRUE(r.termination.exact);
  EXPECT_EQ(r.termination.bound_by, "trip count");
  EXPECT_EQ(r.variables[0].evolution.kind, Evolution::kStable);
}

TEST(LoopRecorder, RingKeepsTheLatestSamples) {
  LoopPolicy policy;
  policy.analysis = true;
  policy.ring = 8;
  LoopCondition cond;
  LoopRecorder rec(policy, cond, {"x"}, std::nullopt);
  for (int64_t it = 0; it < 100; ++it) rec.record(it, {scalar(static_cast<double>(it))}, true);
  LoopReport r = rec.finish("loop0", 100, "max_loop_seconds", 1.0);
  EXPECT_EQ(r.samples, 100);
  EXPECT_EQ(r.variables[0].evolution.samples, 8);
  EXPECT_EQ(r.variables[0].last.mean, 99);
}

TEST(LoopMonitor, KeepsTheLatestReportsAndCountsTheDropped) {
  LoopMonitor m(LoopPolicy{}, 2);
  for (int i = 0; i < 5; ++i) {
    LoopReport r;
    r.node = "n" + std::to_string(i);
    m.add(r);
  }
  std::vector<LoopReport> kept = m.reports();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].node, "n3");
  EXPECT_EQ(kept[1].node, "n4");
  EXPECT_EQ(m.dropped(), 3);
  m.clear();
  EXPECT_TRUE(m.reports().empty());
  EXPECT_EQ(m.dropped(), 0);
}

}  // namespace
}  // namespace sdx::analysis
