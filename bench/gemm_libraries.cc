// sgemm 1024x1024x1024 on OpenBLAS and oneDNN (Debian's libopenblas-dev, libdnnl-dev), p50 of 10 runs.
// Not part of the build; the figures decide which library the fast CPU backend uses (bench/README.md).
//
//   apt-get install libopenblas-dev libdnnl-dev
//   g++ -O2 -std=c++17 bench/gemm_libraries.cc -o /tmp/gemm_libraries -lopenblas -ldnnl
//   OMP_NUM_THREADS=1 /tmp/gemm_libraries; OMP_NUM_THREADS=2 /tmp/gemm_libraries
#include <dnnl.h>
#include <openblas-pthread/cblas.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
extern "C" void openblas_set_num_threads(int);
int main() {
  const int n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (int i = 0; i < n * n; ++i) { a[i] = (i % 7) * 0.1f; b[i] = (i % 5) * 0.2f; }
  auto bench = [&](const char* name, auto fn) {
    for (int w = 0; w < 2; ++w) fn();
    std::vector<double> ts;
    for (int r = 0; r < 10; ++r) {
      auto t0 = std::chrono::steady_clock::now(); fn();
      ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ts.begin(), ts.end());
    std::printf("%-22s p50 %.2f ms  %.1f GFLOP/s\n", name, ts[5] * 1e3, 2.0 * n * n * n / ts[5] / 1e9);
  };
  for (int threads : {1, 2}) {
    openblas_set_num_threads(threads);
    std::printf("threads %d\n", threads);
    bench("openblas sgemm", [&] { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n); });
    setenv("OMP_NUM_THREADS", threads == 1 ? "1" : "2", 1);
    bench("onednn dnnl_sgemm", [&] { dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n); });
  }
}
