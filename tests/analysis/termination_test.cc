#include "analysis/termination.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace sdx::analysis {
namespace {

TEST(Termination, TripCountGivesTheExactRemainder) {
  TerminationInput in;
  in.iteration = 30;
  in.trip_count = 100;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kTerminates);
  ASSERT_TRUE(r.remaining);
  EXPECT_EQ(*r.remaining, 70);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bound_by, "trip count");
  in.iteration = 120;  // past it (e.g. the trip count lowered): nothing left
  EXPECT_EQ(*predict_termination(in).remaining, 0);
}

TEST(Termination, CounterBelowAThresholdEndsAfterThresholdMinusI) {
  for (int i : {7, 50, 99}) {
    std::vector<double> counter;
    for (int k = 0; k <= i; ++k) counter.push_back(k);
    TerminationInput in;
    in.iteration = i;
    in.condition = ConditionForm{"i", Comparison::kLess, 100};
    in.condition_series = counter;
    TerminationReport r = predict_termination(in);
    EXPECT_EQ(r.verdict, TerminationVerdict::kTerminates) << r.describe();
    ASSERT_TRUE(r.remaining) << r.describe();
    EXPECT_EQ(*r.remaining, 100 - i) << r.describe();
    EXPECT_EQ(r.bound_by, "condition");
    EXPECT_FALSE(r.root_cause);
  }
}

TEST(Termination, ConditionAlreadyFalseEndsNow) {
  std::vector<double> s{1, 2, 3, 4, 5, 6, 7};
  TerminationInput in;
  in.condition = ConditionForm{"i", Comparison::kLessEqual, 6};
  in.condition_series = s;
  EXPECT_EQ(*predict_termination(in).remaining, 0);
}

TEST(Termination, GrowingXUnderXGreaterThanZeroNeverEnds) {
  std::vector<double> x{1};
  for (int k = 0; k < 40; ++k) x.push_back(x.back() * 1.1);
  TerminationInput in;
  in.iteration = 40;
  in.condition = ConditionForm{"x", Comparison::kGreater, 0};
  in.condition_series = x;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kWillNotTerminate) << r.describe();
  EXPECT_FALSE(r.remaining);
  ASSERT_TRUE(r.root_cause);
  EXPECT_EQ(r.root_cause->name, "x");
  EXPECT_EQ(r.root_cause->evolution.kind, Evolution::kDiverging);
  EXPECT_NEAR(r.root_cause->evolution.rate, 1.1, 1e-9);
  const std::string d = r.describe();
  EXPECT_NE(d.find("WILL_NOT_TERMINATE"), std::string::npos) << d;
  EXPECT_NE(d.find("x > 0"), std::string::npos) << d;
  EXPECT_NE(d.find("DIVERGING"), std::string::npos) << d;
}

TEST(Termination, TripCountStillBoundsANeverEndingCondition) {
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8};
  TerminationInput in;
  in.iteration = 7;
  in.trip_count = 10;
  in.condition = ConditionForm{"x", Comparison::kGreater, 0};
  in.condition_series = x;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kTerminates);
  EXPECT_EQ(*r.remaining, 3);
  EXPECT_EQ(r.bound_by, "trip count");
  ASSERT_TRUE(r.root_cause);  // what the condition alone would do is still reported
  EXPECT_EQ(r.root_cause->name, "x");
}

TEST(Termination, ConditionEndsBeforeTheTripCount) {
  std::vector<double> i{0, 1, 2, 3, 4, 5};
  TerminationInput in;
  in.iteration = 5;
  in.trip_count = 1000;
  in.condition = ConditionForm{"i", Comparison::kLess, 10};
  in.condition_series = i;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(*r.remaining, 5);
  EXPECT_EQ(r.bound_by, "condition");
  EXPECT_FALSE(r.exact);
}

TEST(Termination, GeometricGrowthCrossesAThreshold) {
  std::vector<double> x{1};
  for (int k = 0; k < 10; ++k) x.push_back(x.back() * 2);  // 1 .. 1024
  TerminationInput in;
  in.condition = ConditionForm{"x", Comparison::kLess, 1e6};
  in.condition_series = x;
  TerminationReport r = predict_termination(in);
  ASSERT_TRUE(r.remaining) << r.describe();
  EXPECT_EQ(*r.remaining, 10);  // 1024 * 2^10 = 1048576 is the first >= 1e6
}

TEST(Termination, ConvergenceInsideTheConditionNeverEnds) {
  // Newton for sqrt(2) under `x > 1`: the limit 1.414 keeps it true.
  std::vector<double> x{3};
  for (int k = 0; k < 4; ++k) x.push_back(0.5 * (x.back() + 2 / x.back()));
  std::vector<double> more = x;
  for (int k = 0; k < 10; ++k) more.push_back(0.5 * (more.back() + 2 / more.back()));
  for (const auto* s : {&x, &more}) {
    TerminationInput in;
    in.condition = ConditionForm{"x", Comparison::kGreater, 1};
    in.condition_series = *s;
    TerminationOptions o;
    o.evolution.min_samples = 4;
    TerminationReport r = predict_termination(in, o);
    EXPECT_EQ(r.verdict, TerminationVerdict::kWillNotTerminate) << r.describe();
    ASSERT_TRUE(r.root_cause);
    EXPECT_EQ(r.root_cause->evolution.kind, Evolution::kConverging);
  }
}

TEST(Termination, ConvergenceAcrossTheThresholdEnds) {
  // x' = 0.5 x + 1 from 0 converges to 2: `x < 1.99` fails when 2 - 2^(1-k) >= 1.99, at k = 8.
  std::vector<double> x{0};
  for (int k = 0; k < 5; ++k) x.push_back(0.5 * x.back() + 1);
  TerminationInput in;
  in.condition = ConditionForm{"x", Comparison::kLess, 1.99};
  in.condition_series = x;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kTerminates) << r.describe();
  EXPECT_EQ(*r.remaining, 3);  // samples are k = 0..5; the first failing one is k = 8
}

TEST(Termination, StrideScalesTheEstimate) {
  std::vector<double> i{0, 10, 20, 30, 40, 50};  // sampled every 10 iterations
  TerminationInput in;
  in.stride = 10;
  in.condition = ConditionForm{"i", Comparison::kLess, 100};
  in.condition_series = i;
  EXPECT_EQ(*predict_termination(in).remaining, 50);
}

TEST(Termination, OscillationThatNeverFailsNeverEnds) {
  std::vector<double> x;
  for (int k = 0; k < 12; ++k) x.push_back(std::vector<double>{1, 2, 3}[k % 3]);
  TerminationInput in;
  in.condition = ConditionForm{"x", Comparison::kGreater, 0};
  in.condition_series = x;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kWillNotTerminate) << r.describe();
  EXPECT_EQ(r.root_cause->evolution.kind, Evolution::kOscillating);
  // `x < 3` on a series ending 1, 2, 3, 1: true now (1) and next (2), false at the 3 after.
  x.pop_back();
  x.pop_back();
  in.condition_series = x;
  in.condition = ConditionForm{"x", Comparison::kLess, 3};
  r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kTerminates) << r.describe();
  EXPECT_EQ(*r.remaining, 2);  // 1 (now), 2, 3
}

TEST(Termination, StableConditionNeverEnds) {
  std::vector<double> x(10, 5.0);
  TerminationInput in;
  in.condition = ConditionForm{"flag", Comparison::kNotEqual, 0};
  in.condition_series = x;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kWillNotTerminate) << r.describe();
  EXPECT_EQ(r.root_cause->evolution.kind, Evolution::kStable);
}

TEST(Termination, ChaoticConditionIsUnknown) {
  std::vector<double> x{0.2};
  for (int k = 0; k < 100; ++k) x.push_back(3.9 * x.back() * (1 - x.back()));
  TerminationInput in;
  in.condition = ConditionForm{"x", Comparison::kGreater, 0};
  in.condition_series = x;
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kUnknown) << r.describe();
  EXPECT_NE(r.explanation.find("CHAOTIC"), std::string::npos) << r.explanation;
}

TEST(Termination, CallerClassificationIsUsedForTheRootCause) {
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7};
  TerminationInput in;
  in.condition = ConditionForm{"x", Comparison::kGreater, 0};
  in.condition_series = x;
  EvolutionReport given;
  given.kind = Evolution::kDiverging;
  given.rate = 1.5;
  in.carried = {{"y", {}}, {"x", given}};
  TerminationReport r = predict_termination(in);
  EXPECT_EQ(r.verdict, TerminationVerdict::kWillNotTerminate);
  EXPECT_EQ(r.root_cause->evolution.rate, 1.5);
}

TEST(Termination, NothingToGoOnIsUnknown) {
  TerminationReport r = predict_termination(TerminationInput{});
  EXPECT_EQ(r.verdict, TerminationVerdict::kUnknown);
  EXPECT_FALSE(r.remaining);
}

}  // namespace
}  // namespace sdx::analysis
