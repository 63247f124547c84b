// Small-M products with int8 weights: X rounded to int16 with integer dot products (W8A16:
// src/backend/cpu/quant/int8_w16_gemm.h) against the weight-only int8 kernel (int8 widened to float, FMA:
// small_m_gemm_packed with WeightType::kInt8), the dynamically quantized one (X to 8 bits, W8A8:
// int8_dynamic_gemm.h) and float32 weights (small_m_gemm_packed), on the decoder's shapes. Not part of
// the build; links the library of a build tree:
//
//   ninja -C build/dev sdx
//   g++ -O2 -std=c++20 -Isrc bench/int8_w16_gemv.cc -o /tmp/int8_w16_gemv -Lbuild/dev -lsdx -Wl,-rpath,$PWD/build/dev -lpthread
//   /tmp/int8_w16_gemv [--cold] [M] [KxN ...]
//
// Per shape and thread count (1: no pool; 2: an sdx ThreadPool of 2 bound as during Session::run): wall time
// per call in µs, median and min of 15 rounds of 200 calls after 200 warm-up calls. By default the weights
// stay in cache between calls; --cold cycles through copies of them, 8 MiB of int8 weights (32 MiB of
// float32) in all, so each call reads its weights from L3 or DRAM like the decoder's layers. "quant" is the X
// quantization of W8A16 alone (part of its time), "vs w8" the weight-only time over the W8A16 time, "rel
// w16" / "rel w8a8" the largest difference of the W8A16 / W8A8 result from the float32 one (the same
// dequantized weights) relative to that output row's largest magnitude, "path" the integer kernels' path.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/quant/int8_dynamic_gemm.h"
#include "backend/cpu/quant/int8_w16_gemm.h"
#include "backend/cpu/gemm/small_m_gemm.h"
#include "backend/cpu/threading/thread_pool.h"

namespace {

using namespace sdx::cpu;

struct Stat {
  double median = 0, min = 0;
};

Stat time_us(const std::function<void()>& fn) {
  for (int i = 0; i < 200; ++i) fn();
  std::vector<double> rounds;
  for (int r = 0; r < 15; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) fn();
    rounds.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 200);
  }
  std::sort(rounds.begin(), rounds.end());
  return Stat{rounds[rounds.size() / 2], rounds[0]};
}

// Largest |y - yf| relative to the row's largest |yf|.
double max_rel(const std::vector<float>& y, const std::vector<float>& yf, int64_t M, int64_t N) {
  double worst = 0;
  for (int64_t m = 0; m < M; ++m) {
    double row_max = 0;
    for (int64_t n = 0; n < N; ++n) row_max = std::max(row_max, std::fabs(double(yf[m * N + n])));
    for (int64_t n = 0; n < N; ++n)
      worst = std::max(worst, std::fabs(double(y[m * N + n]) - yf[m * N + n]) / std::max(row_max, 1e-30));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t M = 1;
  bool cold = false;
  struct Shape {
    int64_t K, N;
  };
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    long long k, n;
    if (std::string(argv[i]) == "--cold")
      cold = true;
    else if (std::sscanf(argv[i], "%lldx%lld", &k, &n) == 2)
      shapes.push_back({k, n});
    else
      M = std::atoll(argv[i]);
  }
  if (shapes.empty()) shapes = {{256, 256}, {256, 768}, {256, 1024}, {1024, 256}};
  std::printf("M = %lld, weights %s; µs per call, median / min of 15 rounds of 200 (wall time)\n",
              static_cast<long long>(M), cold ? "cold (8 MiB of int8 copies cycled)" : "in cache");
  std::printf("%-11s %-3s %15s %15s %15s %15s %7s %6s %8s %8s  %s\n", "K x N", "thr", "W8A16", "w-only int8",
              "W8A8", "float32", "quant", "vs w8", "rel w16", "rel w8a8", "path");
  for (const Shape sh : shapes) {
    const int64_t K = sh.K, N = sh.N;
    std::vector<float> x(M * K), wf(K * N), scale(N), y(M * N), yf(M * N);
    std::vector<int8_t> w8(K * N);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i)) * (1.f + float(i % 5));
    for (int64_t n = 0; n < N; ++n) scale[n] = 0.002f + 0.0001f * float(n % 13);
    for (size_t i = 0; i < w8.size(); ++i) {
      w8[i] = static_cast<int8_t>(int(i * 2654435761u % 255) - 127);
      wf[i] = float(w8[i]) * scale[i % N];
    }
    const int64_t copies = cold ? std::max<int64_t>(1, (int64_t{8} << 20) / (K * N)) : 1;
    std::vector<Int8W16Weights> w16s;
    std::vector<Int8DynamicWeights> dyns;
    std::vector<SmallMPackedWeights> packed8s, packedfs;
    for (int64_t c = 0; c < copies; ++c) {
      w16s.emplace_back(w8.data(), N, K, N, scale.data());
      dyns.emplace_back(w8.data(), N, K, N, scale.data());
      packed8s.emplace_back(SmallMWeights{WeightType::kInt8, w8.data(), N, scale.data()}, K, N);
      packedfs.emplace_back(SmallMWeights{WeightType::kFloat32, wf.data(), N, nullptr}, K, N);
    }
    int64_t next = 0;
    auto pick = [&] {
      next = next + 1 == copies ? 0 : next + 1;
      return next;
    };
    std::vector<char> scratch16(int8_w16_scratch_bytes(M, K)), scratch8(int8_dynamic_scratch_bytes(M, K));
    auto nop = [](int64_t, int64_t) {};

    // Accuracy of the quantized X against float32 weights with the same values.
    small_m_gemm_packed(M, N, K, x.data(), K, packedfs[0], 1.f, 0.f, yf.data(), N, nop);
    int8_w16_gemm(M, K, x.data(), K, w16s[0], y.data(), N, scratch16.data(), nop);
    const double rel16 = max_rel(y, yf, M, N);
    int8_dynamic_gemm(M, K, x.data(), K, dyns[0], y.data(), N, scratch8.data(), nop);
    const double rel8 = max_rel(y, yf, M, N);

    for (int threads : {1, 2}) {
      std::unique_ptr<ThreadPool> pool;
      if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
      ScopedThreadPool bind(pool.get());
      const Stat a =
          time_us([&] { int8_w16_gemm(M, K, x.data(), K, w16s[pick()], y.data(), N, scratch16.data(), nop); });
      const Stat b = time_us(
          [&] { small_m_gemm_packed(M, N, K, x.data(), K, packed8s[pick()], 1.f, 0.f, y.data(), N, nop); });
      const Stat d =
          time_us([&] { int8_dynamic_gemm(M, K, x.data(), K, dyns[pick()], y.data(), N, scratch8.data(), nop); });
      const Stat c = time_us(
          [&] { small_m_gemm_packed(M, N, K, x.data(), K, packedfs[pick()], 1.f, 0.f, y.data(), N, nop); });
      const Stat q = time_us(
          [&] { detail::int8_w16_quantize(detail::int_gemm_active_isa(), M, K, x.data(), K, scratch16.data()); });
      char shape[32];
      std::snprintf(shape, sizeof(shape), "%lldx%lld", static_cast<long long>(K), static_cast<long long>(N));
      std::printf("%-11s %-3d %7.2f / %5.2f %7.2f / %5.2f %7.2f / %5.2f %7.2f / %5.2f %7.2f %5.1fx %8.1e %8.1e  %s\n",
                  shape, threads, a.median, a.min, b.median, b.min, d.median, d.min, c.median, c.min, q.median,
                  b.median / a.median, rel16, rel8, detail::int_gemm_isa_name(detail::int_gemm_active_isa()));
    }
  }
  return 0;
}
