#include "obs/timing_histogram.h"

#include <gtest/gtest.h>

namespace sdx::obs {
namespace {

TEST(TimingHistogram, BucketsAreLogarithmicFrom128Ns) {
  EXPECT_EQ(TimingHistogram::bucket_of(0), 0);
  EXPECT_EQ(TimingHistogram::bucket_of(127), 0);
  EXPECT_EQ(TimingHistogram::bucket_of(128), 1);
  EXPECT_EQ(TimingHistogram::bucket_of(255), 1);
  EXPECT_EQ(TimingHistogram::bucket_of(256), 2);
  EXPECT_EQ(TimingHistogram::bucket_of(1000), 3);      // [512, 1024)
  EXPECT_EQ(TimingHistogram::bucket_of(1'000'000), 13);  // [524288, 1048576)
  EXPECT_EQ(TimingHistogram::bucket_of(uint64_t{1} << 40), TimingHistogram::kBuckets - 1);
  for (int b = 1; b < TimingHistogram::kBuckets; ++b) {
    EXPECT_EQ(TimingHistogram::bucket_of(static_cast<uint64_t>(TimingHistogram::lower_edge(b))), b);
    EXPECT_EQ(TimingHistogram::bucket_of(static_cast<uint64_t>(TimingHistogram::lower_edge(b)) - 1), b - 1);
  }
}

TEST(TimingHistogram, PercentilesLieInTheRightBucketAndWithinMinMax) {
  TimingHistogram h;
  for (int i = 0; i < 90; ++i) h.add(1000);    // bucket [512, 1024)
  for (int i = 0; i < 9; ++i) h.add(100'000);  // bucket [65536, 131072)
  h.add(5'000'000);
  EXPECT_EQ(h.total(), 100u);
  const double p50 = h.percentile(0.5, 1000, 5e6), p90 = h.percentile(0.9, 1000, 5e6);
  const double p99 = h.percentile(0.99, 1000, 5e6);
  EXPECT_GE(p50, 1000);
  EXPECT_LT(p50, 1024);
  EXPECT_LE(p90, 1024);
  EXPECT_GE(p99, 65536);
  EXPECT_LE(p99, 131072);
  EXPECT_EQ(h.percentile(1.0, 1000, 5e6), 5e6);  // clamped to the observed max
  EXPECT_EQ(TimingHistogram().percentile(0.5, 0, 0), 0);
}

}  // namespace
}  // namespace sdx::obs
