// plan/bucket_choice.h: the dynamic program is optimal (against every subset on small random traces), never
// pads more than the best powers of two with as many buckets, weighs plan memory, and the two-dim search
// beats powers of two on a clustered trace of batch sizes and lengths.
#include "plan/bucket_choice.h"

#include <gtest/gtest.h>

#include <random>

namespace sdx::plan {
namespace {

TEST(BucketChoice, SmallExamples) {
  const std::vector<SizeCount> trace = {{1, 900}, {3, 40}, {7, 60}};
  BucketChoice c = choose_buckets(trace, 2);
  EXPECT_EQ(c.sizes, (std::vector<int64_t>{1, 7}));
  EXPECT_DOUBLE_EQ(c.padding, 40 * 4);
  BucketChoice p = choose_power_of_two_buckets(trace, 2);
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{1, 8}));
  EXPECT_DOUBLE_EQ(p.padding, 40 * 5 + 60 * 1);
  EXPECT_EQ(choose_buckets(trace, 3).sizes, (std::vector<int64_t>{1, 3, 7}));
  EXPECT_EQ(choose_buckets(trace, 9).sizes, (std::vector<int64_t>{1, 3, 7}));  // no more buckets than sizes
  EXPECT_EQ(choose_buckets(trace, 1).sizes, (std::vector<int64_t>{7}));
  EXPECT_TRUE(choose_buckets({}, 4).sizes.empty());
  EXPECT_TRUE(choose_buckets(trace, 0).sizes.empty());
  EXPECT_TRUE(choose_buckets(trace, 2, 0, {2, 4}).sizes.empty());  // no candidate serves 7
  // Repeated sizes merge; zero counts do not count.
  EXPECT_EQ(choose_buckets({{5, 1}, {5, 2}, {9, 0}}, 2).sizes, (std::vector<int64_t>{5}));
  double unserved = 0;
  EXPECT_DOUBLE_EQ(padding_of(trace, {3}, &unserved), 900 * 2);
  EXPECT_DOUBLE_EQ(unserved, 60);
}

TEST(BucketChoice, PlanCostTradesBucketsForPadding) {
  const std::vector<SizeCount> trace = {{1, 1}, {100, 1}};
  EXPECT_EQ(choose_buckets(trace, 2, 0).sizes, (std::vector<int64_t>{1, 100}));
  EXPECT_EQ(choose_buckets(trace, 2, 10).sizes, (std::vector<int64_t>{1, 100}));  // 10 to hold bucket 1 < 99 padded
  EXPECT_EQ(choose_buckets(trace, 2, 200).sizes, (std::vector<int64_t>{100}));
}

double brute_force(const std::vector<SizeCount>& trace, int k, std::vector<int64_t>* best_sizes) {
  std::vector<int64_t> sizes;
  for (const SizeCount& s : trace) sizes.push_back(s.size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  double best = 1e300;
  for (uint32_t mask = 1; mask < (1u << sizes.size()); ++mask) {
    if (!(mask >> (sizes.size() - 1) & 1) || __builtin_popcount(mask) > k) continue;  // the largest is a bucket
    std::vector<int64_t> b;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (mask >> i & 1) b.push_back(sizes[i]);
    const double pad = padding_of(trace, b);
    if (pad < best) {
      best = pad;
      *best_sizes = b;
    }
  }
  return best;
}

TEST(BucketChoice, OptimalOnRandomTracesAndNeverWorseThanPowersOfTwo) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<SizeCount> trace;
    const int n = 1 + static_cast<int>(rng() % 9);
    for (int i = 0; i < n; ++i) trace.push_back({1 + static_cast<int64_t>(rng() % 300), 1.0 + rng() % 50});
    for (int k = 1; k <= 5; ++k) {
      std::vector<int64_t> want;
      const double best = brute_force(trace, k, &want);
      const BucketChoice got = choose_buckets(trace, k);
      ASSERT_NEAR(got.padding, best, 1e-6) << "trial " << trial << " k " << k;
      ASSERT_LE(static_cast<int>(got.sizes.size()), k);
      double unserved = 0;
      padding_of(trace, got.sizes, &unserved);
      ASSERT_EQ(unserved, 0);
      ASSERT_LE(got.padding, choose_power_of_two_buckets(trace, k).padding + 1e-6);
    }
  }
}

// A recorded-style trace: batch sizes clustered at 1, 3, 6 and 12, lengths around 40, 90, 300 and 700.
TEST(BucketChoice, TwoDimsBeatPowersOfTwoOnAClusteredTrace) {
  std::mt19937 rng(3);
  std::vector<SizePair> trace;
  const int64_t batches[] = {1, 3, 6, 12}, lengths[] = {40, 90, 300, 700};
  for (int i = 0; i < 2000; ++i) {
    const int64_t b = batches[rng() % 4], l = lengths[rng() % 4] + static_cast<int64_t>(rng() % 21) - 10;
    trace.push_back({b, l, 1});
  }
  const BucketChoice2d autob = choose_buckets_2d(trace, 4, 4);
  const BucketChoice2d pow2 = choose_buckets_2d(trace, 4, 4, /*power_of_two=*/true);
  EXPECT_LE(autob.first.size(), 4u);
  EXPECT_LE(autob.second.size(), 4u);
  EXPECT_DOUBLE_EQ(autob.padding, padding_of_2d(trace, autob.first, autob.second));
  EXPECT_EQ(autob.first, (std::vector<int64_t>{1, 3, 6, 12}));
  EXPECT_LT(autob.padding, 0.25 * pow2.padding) << autob.padding << " vs " << pow2.padding;
  for (int64_t p : pow2.first) EXPECT_EQ(p & (p - 1), 0);
}

}  // namespace
}  // namespace sdx::plan
