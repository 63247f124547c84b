#include "obs/machine_peak.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace sdx::obs {
namespace {

// Only sanity: the figures are positive and finite, and a call is quick. Performance itself is measured
// by bench/suite.py, never asserted in a test.
TEST(MachinePeak, IsaNameIsKnown) {
  const std::string isa = fma_isa_name();
  EXPECT_TRUE(isa == "avx512f" || isa == "avx2+fma" || isa == "scalar") << isa;
}

TEST(MachinePeak, FmaPeakIsPositive) {
  for (int threads : {1, 2}) {
    const double gflops = measure_fma_peak(threads, /*seconds=*/0.01, /*repeats=*/1);
    EXPECT_GT(gflops, 0.0) << threads << " threads";
    EXPECT_TRUE(std::isfinite(gflops));
    EXPECT_LT(gflops, 1e6);  // a million GFLOP/s per call would mean the timing is broken
  }
}

TEST(MachinePeak, NonPositiveThreadsMeansOne) { EXPECT_GT(measure_fma_peak(0, 0.005, 1), 0.0); }

TEST(MachinePeak, MemoryBandwidthIsPositive) {
  for (int threads : {1, 2}) {
    const double gbs = measure_memory_bandwidth(threads, size_t{16} << 20, /*repeats=*/2);
    EXPECT_GT(gbs, 0.0) << threads << " threads";
    EXPECT_TRUE(std::isfinite(gbs));
    EXPECT_LT(gbs, 1e5);
  }
}

TEST(MachinePeak, TinyBufferStillStreams) {
  // Smaller than one 256-byte chunk per thread: rounded up to one chunk each.
  EXPECT_GT(measure_memory_bandwidth(3, 100, 1), 0.0);
}

}  // namespace
}  // namespace sdx::obs
