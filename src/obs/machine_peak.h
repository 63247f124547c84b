// Machine figures for the benchmarks: the measured single-precision FMA peak and memory read bandwidth.
//
// The benchmark suite (bench/suite.py) states GEMM GFLOP/s as a fraction of what the CPU can do and the
// decoder step's bytes per second as a fraction of what memory delivers, so both must be measured on the
// machine at hand, with the same thread count, rather than taken from a datasheet.
//
//   double peak = sdx::obs::measure_fma_peak(2);            // GFLOP/s, 2 threads at once
//   double bw = sdx::obs::measure_memory_bandwidth(2);      // GB/s (1e9 bytes/s), read stream
//   printf("%s: %.0f GFLOP/s, %.1f GB/s\n", sdx::obs::fma_isa_name(), peak, bw);
//
// The FMA loop uses the widest vector ISA the CPU reports at run time (AVX-512F, else AVX2+FMA, else a
// portable scalar loop) with enough independent accumulators to hide the FMA latency on two FMA ports.
// Each function starts its own threads (not the session's pool) and returns the best of a few
// repetitions; a call takes a fraction of a second.
#pragma once

#include <cstddef>

namespace sdx::obs {

// "avx512f", "avx2+fma" or "scalar": the ISA measure_fma_peak uses on this CPU.
const char* fma_isa_name();

// fp32 FMA throughput in GFLOP/s (an FMA counts 2 flops) of `threads` threads running at once (summed),
// best of `repeats` repetitions of about `seconds` each. threads <= 0 means 1.
double measure_fma_peak(int threads, double seconds = 0.1, int repeats = 3);

// Memory read bandwidth in GB/s (1e9 bytes/s) of `threads` threads each streaming over its own part of a
// buffer of `bytes` bytes (0: max(8 x L3 cache, 256 MiB)), best of `repeats` passes. Each thread first
// touches its part so the pages are local to it.
double measure_memory_bandwidth(int threads, std::size_t bytes = 0, int repeats = 5);

}  // namespace sdx::obs
