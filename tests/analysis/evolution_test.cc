#include "analysis/evolution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

namespace sdx::analysis {
namespace {

std::vector<double> iterate(double x0, int n, const std::function<double(double)>& f) {
  std::vector<double> s{x0};
  while (static_cast<int>(s.size()) < n) s.push_back(f(s.back()));
  return s;
}

TEST(Evolution, NewtonSqrt2Converges) {
  auto s = iterate(1.0, 20, [](double x) { return 0.5 * (x + 2 / x); });
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kConverging) << e.describe();
  EXPECT_NEAR(e.limit, 1.41421356, 1e-8);
  EXPECT_LT(e.delta_ratio, 0.2);  // quadratic convergence: the deltas collapse
}

TEST(Evolution, AitkenExtrapolatesAGeometricSeriesBeforeItSettles) {
  auto s = iterate(0.0, 8, [](double x) { return 0.5 * x + 1; });  // limit 2, not reached in 8 steps
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kConverging) << e.describe();
  EXPECT_GT(std::fabs(s.back() - 2), 1e-3);
  EXPECT_NEAR(e.limit, 2.0, 1e-12);
  EXPECT_NEAR(e.delta_ratio, 0.5, 1e-12);
}

TEST(Evolution, DampedOscillationConverges) {
  auto s = iterate(1.0, 12, [](double x) { return -0.5 * x + 3; });  // limit 2, alternating sides
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kConverging) << e.describe();
  EXPECT_NEAR(e.limit, 2.0, 1e-12);
}

TEST(Evolution, GeometricGrowthDiverges) {
  auto s = iterate(1.0, 30, [](double x) { return x * 1.1; });
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kDiverging) << e.describe();
  EXPECT_NEAR(e.rate, 1.1, 1e-9);
  EXPECT_GT(e.step, 0);
}

TEST(Evolution, CounterDivergesLinearly) {
  auto s = iterate(0.0, 10, [](double x) { return x + 1; });
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kDiverging) << e.describe();
  EXPECT_DOUBLE_EQ(e.step, 1);
  EXPECT_TRUE(std::isfinite(e.rate));
}

TEST(Evolution, CountdownIsALinearDivergenceNotChaos) {
  // |x| shrinks on every step, yet the progression is unbounded: DIVERGING with its (negative) step.
  auto s = iterate(10000.0, 50, [](double x) { return x - 4; });
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kDiverging) << e.describe();
  EXPECT_DOUBLE_EQ(e.step, -4);
  EXPECT_LT(e.rate, 1);
}

TEST(Evolution, OverflowIsDivergingWithInfiniteRate) {
  std::vector<double> s{1, 1e200, INFINITY};
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kDiverging);
  EXPECT_TRUE(std::isinf(e.rate));
}

TEST(Evolution, PeriodThreeOscillates) {
  std::vector<double> s;
  for (int i = 0; i < 30; ++i) s.push_back(std::vector<double>{1, 4, -2}[i % 3]);
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kOscillating) << e.describe();
  EXPECT_EQ(e.period, 3);
  EXPECT_EQ(e.min, -2);
  EXPECT_EQ(e.max, 4);
}

TEST(Evolution, PeriodTwoOscillates) {
  auto s = iterate(1.0, 16, [](double x) { return -x; });
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kOscillating) << e.describe();
  EXPECT_EQ(e.period, 2);
}

TEST(Evolution, LogisticMapPeriodTwoAtR32Oscillates) {
  // r = 3.2 settles on a 2-cycle; classify after the transient.
  auto s = iterate(0.5, 400, [](double x) { return 3.2 * x * (1 - x); });
  EvolutionReport e = classify_evolution(std::span<const double>(s).last(40));
  EXPECT_EQ(e.kind, Evolution::kOscillating) << e.describe();
  EXPECT_EQ(e.period, 2);
}

TEST(Evolution, ConstantIsStable) {
  std::vector<double> s(10, 3.25);
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kStable) << e.describe();
  EXPECT_EQ(e.last, 3.25);
  // Changes below the tolerance are no change; above it they are.
  s[5] += 1e-12;
  EXPECT_EQ(classify_evolution(s).kind, Evolution::kStable);
  s[5] += 1e-3;
  EXPECT_NE(classify_evolution(s).kind, Evolution::kStable);
}

TEST(Evolution, LogisticMapAtR39IsChaotic) {
  auto s = iterate(0.2, 200, [](double x) { return 3.9 * x * (1 - x); });
  EvolutionReport e = classify_evolution(s);
  EXPECT_EQ(e.kind, Evolution::kChaotic) << e.describe();
  EXPECT_GT(e.min, 0);
  EXPECT_LT(e.max, 1);
}

TEST(Evolution, TooFewSamplesAreInsufficient) {
  std::vector<double> s{1, 2, 3};
  EXPECT_EQ(classify_evolution(s).kind, Evolution::kInsufficientData);
  EXPECT_EQ(classify_evolution({}).kind, Evolution::kInsufficientData);
  EvolutionOptions o;
  o.min_samples = 3;
  EXPECT_EQ(classify_evolution(s, o).kind, Evolution::kDiverging);
}

TEST(Evolution, OptionsMoveTheThresholds) {
  // x' = 0.98 x + 1 converges slowly: a contraction of 0.98 per step (the default accepts up to 0.99).
  auto s = iterate(0.0, 30, [](double x) { return 0.98 * x + 1; });
  EXPECT_EQ(classify_evolution(s).kind, Evolution::kConverging);
  EvolutionOptions strict;
  strict.converging_max_ratio = 0.9;
  EXPECT_NE(classify_evolution(s, strict).kind, Evolution::kConverging);
  // Only the window is classified: a constant tail after a jump is STABLE.
  std::vector<double> jump{0, 5, 1, 7, 3, 3, 3, 3, 3, 3, 3};
  EvolutionOptions tail;
  tail.window = 6;
  EXPECT_EQ(classify_evolution(jump, tail).kind, Evolution::kStable);
}

TEST(Evolution, DescribeNamesTheClassAndItsFigures) {
  auto s = iterate(1.0, 30, [](double x) { return x * 1.1; });
  const std::string d = classify_evolution(s).describe();
  EXPECT_NE(d.find("DIVERGING"), std::string::npos) << d;
  EXPECT_NE(d.find("x1.1"), std::string::npos) << d;
}

}  // namespace
}  // namespace sdx::analysis
