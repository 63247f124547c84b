#include "obs/machine_peak.h"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

namespace sdx::obs {
namespace {

using Clock = std::chrono::steady_clock;

// Results are folded into this so the compiler cannot drop the loops.
std::atomic<double> g_sink{0.0};

void sink(double v) { g_sink.fetch_add(v, std::memory_order_relaxed); }

// Sum of the 16 lanes. Not _mm512_reduce_add_ps: GCC 12's header trips -Wuninitialized in it.
__attribute__((target("avx512f"))) double lanes_sum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  double total = 0;
  for (float x : lanes) total += x;
  return total;
}

// Runs body(t) for t in [0, threads) on `threads` threads at once (the caller is thread 0) and returns the
// wall time in seconds from the common start to the last finish. The workers spin until `go` so that
// thread start-up is not timed.
double run_together(int threads, const std::function<void(int)>& body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ready.fetch_add(1, std::memory_order_relaxed);
      // acquire: pairs with the release store of `go`; nothing else is published, the order only keeps
      // the body after the start signal.
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(t);
    });
  }
  while (ready.load(std::memory_order_relaxed) < threads - 1) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  body(0);
  for (std::thread& w : workers) w.join();  // join synchronizes: every body has finished
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- FMA loops: acc = acc * a + b on independent accumulators; a < 1 keeps the values bounded and
// normal. Each returns the flops it did (2 per lane per FMA).

constexpr int kAvx512Accs = 16;  // 16 of the 32 zmm registers: latency 4 x 2 ports needs >= 8
constexpr int kAvx2Accs = 12;    // 12 of the 16 ymm registers, plus a and b
constexpr int kScalarAccs = 8;

__attribute__((target("avx512f"))) double fma_avx512(int64_t iters) {
  const __m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(1e-4f);
  __m512 x0 = _mm512_set1_ps(0.0f), x1 = _mm512_set1_ps(0.01f), x2 = _mm512_set1_ps(0.02f), x3 = _mm512_set1_ps(0.03f),
         x4 = _mm512_set1_ps(0.04f), x5 = _mm512_set1_ps(0.05f), x6 = _mm512_set1_ps(0.06f), x7 = _mm512_set1_ps(0.07f),
         x8 = _mm512_set1_ps(0.08f), x9 = _mm512_set1_ps(0.09f), x10 = _mm512_set1_ps(0.10f),
         x11 = _mm512_set1_ps(0.11f), x12 = _mm512_set1_ps(0.12f), x13 = _mm512_set1_ps(0.13f),
         x14 = _mm512_set1_ps(0.14f), x15 = _mm512_set1_ps(0.15f);
  for (int64_t i = 0; i < iters; ++i) {
    x0 = _mm512_fmadd_ps(x0, a, b);
    x1 = _mm512_fmadd_ps(x1, a, b);
    x2 = _mm512_fmadd_ps(x2, a, b);
    x3 = _mm512_fmadd_ps(x3, a, b);
    x4 = _mm512_fmadd_ps(x4, a, b);
    x5 = _mm512_fmadd_ps(x5, a, b);
    x6 = _mm512_fmadd_ps(x6, a, b);
    x7 = _mm512_fmadd_ps(x7, a, b);
    x8 = _mm512_fmadd_ps(x8, a, b);
    x9 = _mm512_fmadd_ps(x9, a, b);
    x10 = _mm512_fmadd_ps(x10, a, b);
    x11 = _mm512_fmadd_ps(x11, a, b);
    x12 = _mm512_fmadd_ps(x12, a, b);
    x13 = _mm512_fmadd_ps(x13, a, b);
    x14 = _mm512_fmadd_ps(x14, a, b);
    x15 = _mm512_fmadd_ps(x15, a, b);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                           _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)),
                                     _mm512_add_ps(_mm512_add_ps(x12, x13), _mm512_add_ps(x14, x15))));
  sink(lanes_sum(s));
  return static_cast<double>(iters) * kAvx512Accs * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters) {
  const __m256 a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(1e-4f);
  __m256 x0 = _mm256_set1_ps(0.0f), x1 = _mm256_set1_ps(0.01f), x2 = _mm256_set1_ps(0.02f), x3 = _mm256_set1_ps(0.03f),
         x4 = _mm256_set1_ps(0.04f), x5 = _mm256_set1_ps(0.05f), x6 = _mm256_set1_ps(0.06f), x7 = _mm256_set1_ps(0.07f),
         x8 = _mm256_set1_ps(0.08f), x9 = _mm256_set1_ps(0.09f), x10 = _mm256_set1_ps(0.10f),
         x11 = _mm256_set1_ps(0.11f);
  for (int64_t i = 0; i < iters; ++i) {
    x0 = _mm256_fmadd_ps(x0, a, b);
    x1 = _mm256_fmadd_ps(x1, a, b);
    x2 = _mm256_fmadd_ps(x2, a, b);
    x3 = _mm256_fmadd_ps(x3, a, b);
    x4 = _mm256_fmadd_ps(x4, a, b);
    x5 = _mm256_fmadd_ps(x5, a, b);
    x6 = _mm256_fmadd_ps(x6, a, b);
    x7 = _mm256_fmadd_ps(x7, a, b);
    x8 = _mm256_fmadd_ps(x8, a, b);
    x9 = _mm256_fmadd_ps(x9, a, b);
    x10 = _mm256_fmadd_ps(x10, a, b);
    x11 = _mm256_fmadd_ps(x11, a, b);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                           _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  double total = 0;
  for (float v : lanes) total += v;
  sink(total);
  return static_cast<double>(iters) * kAvx2Accs * 8 * 2;
}

double fma_scalar(int64_t iters) {
  const float a = 0.9999f, b = 1e-4f;
  float x[kScalarAccs];
  for (int j = 0; j < kScalarAccs; ++j) x[j] = 0.01f * static_cast<float>(j);
  for (int64_t i = 0; i < iters; ++i)
    for (float& v : x) v = v * a + b;
  double total = 0;
  for (float v : x) total += v;
  sink(total);
  return static_cast<double>(iters) * kScalarAccs * 2;
}

enum class Isa { kAvx512, kAvx2, kScalar };

Isa detect_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

double fma_loop(Isa isa, int64_t iters) {
  switch (isa) {
    case Isa::kAvx512:
      return fma_avx512(iters);
    case Isa::kAvx2:
      return fma_avx2(iters);
    case Isa::kScalar:
      break;
  }
  return fma_scalar(iters);
}

// ---- Read stream: sums the floats of [p, p + n) with independent accumulators (n a multiple of 64).

__attribute__((target("avx512f"))) void read_avx512(const float* p, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i < n; i += 64) {
    s0 = _mm512_add_ps(s0, _mm512_load_ps(p + i));
    s1 = _mm512_add_ps(s1, _mm512_load_ps(p + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_load_ps(p + i + 32));
    s3 = _mm512_add_ps(s3, _mm512_load_ps(p + i + 48));
  }
  sink(lanes_sum(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3))));
}

__attribute__((target("avx2"))) void read_avx2(const float* p, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i < n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  double total = 0;
  for (float v : lanes) total += v;
  sink(total);
}

void read_scalar(const float* p, size_t n) {
  // Integer adds on 8-byte words: associative, so independent accumulators need no vector ISA.
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i < n / 2; i += 4) {
    s0 += w[i];
    s1 += w[i + 1];
    s2 += w[i + 2];
    s3 += w[i + 3];
  }
  sink(static_cast<double>(s0 ^ s1 ^ s2 ^ s3));
}

void read_stream(Isa isa, const float* p, size_t n) {
  switch (isa) {
    case Isa::kAvx512:
      return read_avx512(p, n);
    case Isa::kAvx2:
      return read_avx2(p, n);
    case Isa::kScalar:
      break;
  }
  read_scalar(p, n);
}

size_t default_stream_bytes() {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  size_t bytes = size_t{256} << 20;
  if (l3 > 0) bytes = std::max(bytes, static_cast<size_t>(l3) * 8);
  return std::min(bytes, size_t{1} << 30);  // some VMs report a whole socket's L3
}

}  // namespace

const char* fma_isa_name() {
  switch (detect_isa()) {
    case Isa::kAvx512:
      return "avx512f";
    case Isa::kAvx2:
      return "avx2+fma";
    case Isa::kScalar:
      break;
  }
  return "scalar";
}

double measure_fma_peak(int threads, double seconds, int repeats) {
  threads = std::max(1, threads);
  repeats = std::max(1, repeats);
  const Isa isa = detect_isa();
  // Calibrate on one thread: iterations for about `seconds` per repetition.
  int64_t iters = 1 << 14;
  double elapsed = 0;
  for (;;) {
    const auto t0 = Clock::now();
    fma_loop(isa, iters);
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    if (elapsed >= 0.01 || iters >= (int64_t{1} << 40)) break;
    iters *= 4;
  }
  iters = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * seconds / std::max(elapsed, 1e-9)));
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> flops(static_cast<size_t>(threads), 0.0);
    const double wall = run_together(threads, [&](int t) { flops[static_cast<size_t>(t)] = fma_loop(isa, iters); });
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / wall / 1e9);
  }
  return best;
}

double measure_memory_bandwidth(int threads, size_t bytes, int repeats) {
  threads = std::max(1, threads);
  repeats = std::max(1, repeats);
  if (bytes == 0) bytes = default_stream_bytes();
  const Isa isa = detect_isa();
  // Each thread's part is a multiple of 64 floats (256 bytes), so the loops need no tail.
  constexpr size_t kChunk = 64;
  const size_t chunks_per_thread = std::max<size_t>(1, bytes / sizeof(float) / kChunk / static_cast<size_t>(threads));
  const size_t part = chunks_per_thread * kChunk;
  const size_t total_floats = part * static_cast<size_t>(threads);
  auto* data = static_cast<float*>(std::aligned_alloc(64, total_floats * sizeof(float)));
  if (data == nullptr) return 0.0;
  // First touch by the thread that will read the part (page placement on NUMA machines).
  run_together(threads, [&](int t) { std::fill_n(data + part * static_cast<size_t>(t), part, 1.0f); });
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const double wall =
        run_together(threads, [&](int t) { read_stream(isa, data + part * static_cast<size_t>(t), part); });
    best = std::max(best, static_cast<double>(total_floats * sizeof(float)) / wall / 1e9);
  }
  std::free(data);
  return best;
}

}  // namespace sdx::obs
