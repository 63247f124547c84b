// Float GEMM with a constant weight: OpenBLAS sgemm (what cpu::gemm calls, packing B on every call) against
// oneDNN's matmul primitive with the weight reordered once into its preferred layout (format_tag::any),
// as sdx.Linear / MatMul use it (src/backend/cpu/onednn/onednn_matmul.h). The shapes are the BERT suite's
// projections (M = 128 tokens). Not part of the build; the figures decide which shapes go to oneDNN
// (bench/README.md, "Pre-packed GEMM").
//
//   g++ -O2 -std=c++17 bench/matmul_prepacked.cc -o /tmp/matmul_prepacked -lopenblas -ldnnl -lpthread
//   OMP_NUM_THREADS=1 /tmp/matmul_prepacked [MxKxN ...]
//
// Threading as in sdx: every library call is single-threaded; at 2 threads two persistent threads
// (spinning between calls, like the session pool) each run half of the work: OpenBLAS as cpu::gemm
// splits it (rows of C when M >= N, else column blocks), oneDNN by rows of C (what OneDnnMatMul does:
// one primitive per row count, one packed W shared by all) and, for comparison, by 64-column blocks
// (each thread its own packed slice of W and a dense output buffer copied into C: oneDNN 2.6's brgemm
// kernel declines a strided C). Per shape: median and min of 9 rounds of 200 calls (thread CPU time, see time_us).
#include <openblas-pthread/cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace {

using dnnl::memory;

// Runs fn(thread_index) on `threads` threads per call: the caller is thread 0, a spinning helper thread 1.
class Team {
 public:
  explicit Team(int threads) : threads_(threads) {
    if (threads_ > 1) helper_ = std::thread([this] { loop(); });
  }
  ~Team() {
    if (threads_ > 1) {
      stop_.store(true, std::memory_order_release);
      helper_.join();
    }
  }
  void run(const std::function<void(int)>& fn) {
    if (threads_ == 1) return fn(0);
    fn_ = &fn;
    done_.store(false, std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);  // publishes fn_
    fn(0);
    while (!done_.load(std::memory_order_acquire)) {
    }
  }

 private:
  void loop() {
    uint64_t seen = 0;
    while (!stop_.load(std::memory_order_acquire)) {
      const uint64_t e = epoch_.load(std::memory_order_acquire);
      if (e == seen) continue;
      seen = e;
      (*fn_)(1);
      done_.store(true, std::memory_order_release);  // publishes the helper's half of C
    }
  }
  int threads_;
  std::thread helper_;
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> done_{true}, stop_{false};
};

struct Stat {
  double median = 0, min = 0;
};

// Per round of 200 calls: the larger of the threads' CPU time spent in fn (CLOCK_THREAD_CPUTIME_ID), per
// call. Thread CPU time, not wall time: the machine these figures come from is shared with compile jobs,
// which preempt either thread at random; CPU time still counts the cache and memory contention of two
// threads working at once, but not the time a preempted thread waits.
Stat time_us(Team& team, const std::function<void(int)>& fn) {
  double spent[2] = {0, 0};
  auto timed = [&](int t) {
    timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    fn(t);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    spent[t] += (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) * 1e-3;
  };
  for (int i = 0; i < 50; ++i) team.run(timed);
  std::vector<double> rounds;
  for (int r = 0; r < 9; ++r) {
    spent[0] = spent[1] = 0;
    for (int i = 0; i < 200; ++i) team.run(timed);
    rounds.push_back(std::max(spent[0], spent[1]) / 200);
  }
  std::sort(rounds.begin(), rounds.end());
  return Stat{rounds[4], rounds[0]};
}

// One slice of C = X W (+ b) on oneDNN: rows [m0, m0 + m) and columns [n0, n0 + n); the packed
// weights are shared between row slices (oneDNN picks the same layout, BA16a64b, for any M).
struct Slice {
  int64_t m0 = 0, n0 = 0, m = 0, n = 0;
  dnnl::matmul prim;
  memory src, wts, bias, dst, scratch;
  std::vector<float> scratch_buf, dst_buf;  // dst_buf: a dense [m, n] buffer for column slices
  std::string impl;
};

struct Packed {
  std::vector<float> buf;
  memory::desc md;
};

Slice make_slice(dnnl::engine& eng, dnnl::stream& s, int64_t M, int64_t K, int64_t N, int64_t m0, int64_t m, int64_t n0,
                 int64_t n, const float* x, const float* w, const float* b, float* y, bool relu, Packed* shared) {
  Slice sl;
  sl.m0 = m0;
  sl.n0 = n0;
  sl.m = m;
  sl.n = n;
  const memory::desc src_md({m, K}, memory::data_type::f32, memory::dims{K, 1});
  const memory::desc w_any({K, n}, memory::data_type::f32, memory::format_tag::any);
  const memory::desc b_md({1, n}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc dst_md({m, n}, memory::data_type::f32, memory::dims{n, 1});  // dense
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, INFINITY);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_any, b_md, dst_md), attr, eng);
  sl.impl = pd.impl_info_str();
  sl.prim = dnnl::matmul(pd);
  sl.scratch_buf.resize(pd.scratchpad_desc().get_size() / sizeof(float) + 16);
  if (!shared->buf.empty() && shared->md != pd.weights_desc()) std::printf("weights layout differs between slices\n");
  if (shared->buf.empty()) {
    shared->md = pd.weights_desc();
    shared->buf.resize(pd.weights_desc().get_size() / sizeof(float) + 16);
    memory w_user(memory::desc({K, n}, memory::data_type::f32, memory::dims{N, 1}), eng, const_cast<float*>(w + n0));
    memory packed(pd.weights_desc(), eng, shared->buf.data());
    dnnl::reorder(w_user, packed).execute(s, w_user, packed);
  }
  sl.wts = memory(pd.weights_desc(), eng, shared->buf.data());
  sl.src = memory(src_md, eng, const_cast<float*>(x + m0 * K));
  sl.bias = memory(b_md, eng, const_cast<float*>(b + n0));
  if (n == N) {
    sl.dst = memory(dst_md, eng, y + m0 * N);
  } else {
    sl.dst_buf.resize(m * n);
    sl.dst = memory(dst_md, eng, sl.dst_buf.data());
  }
  sl.scratch = memory(pd.scratchpad_desc(), eng, sl.scratch_buf.data());
  return sl;
}

void run_slice(Slice& sl, dnnl::stream& s, int64_t N, float* y) {
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, sl.src.get()},
                            {DNNL_ARG_WEIGHTS, sl.wts.get()},
                            {DNNL_ARG_BIAS, sl.bias.get()},
                            {DNNL_ARG_DST, sl.dst.get()},
                            {DNNL_ARG_SCRATCHPAD, sl.scratch.get()}};
  dnnl_primitive_execute(sl.prim.get(), s.get(), 5, args);
  if (!sl.dst_buf.empty())
    for (int64_t i = 0; i < sl.m; ++i)
      std::copy(sl.dst_buf.begin() + i * sl.n, sl.dst_buf.begin() + (i + 1) * sl.n, y + (sl.m0 + i) * N + sl.n0);
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  struct Shape {
    int64_t M, K, N;
  };
  std::printf("microseconds per call (median / min of 9 rounds); oneDNN: bias in the primitive\n");
  std::printf("%-16s %-3s %15s %15s %15s %15s  %s\n", "M x K x N", "thr", "openblas", "onednn", "onednn relu",
              "onednn by cols", "oneDNN implementation");
  // Shapes from the command line (MxKxN ...), else the BERT suite's and a few others.
  std::vector<Shape> shapes = {{128, 256, 256}, {128, 256, 768}, {128, 256, 1024}, {128, 1024, 256},
                               {9, 256, 256},   {33, 256, 1024}, {130, 100, 70},   {512, 256, 1024}};
  if (argc > 1) shapes.clear();
  for (int i = 1; i < argc; ++i) {
    long long m, k, n;
    if (std::sscanf(argv[i], "%lldx%lldx%lld", &m, &k, &n) == 3) shapes.push_back({m, k, n});
  }
  for (Shape sh : shapes) {
    const int64_t M = sh.M, K = sh.K, N = sh.N;
    std::vector<float> x(M * K), w(K * N), b(N), y(M * N), y2(M * N);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 13) - 6) * 0.1f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 5 % 11) - 5) * 0.05f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.01f * float(i % 7);
    for (int threads : {1, 2}) {
      Team team(threads);
      // OpenBLAS, split as cpu::gemm splits it: rows of C when M >= N, else column blocks of 16 (GEMM only,
      // no bias).
      auto blas = [&](int t) {
        if (M >= N) {
          const int64_t m0 = M * t / threads, m1 = M * (t + 1) / threads;
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m1 - m0), int(N), int(K), 1.f, x.data() + m0 * K,
                      int(K), w.data(), int(N), 0.f, y.data() + m0 * N, int(N));
        } else {
          const int64_t blocks16 = (N + 15) / 16;
          const int64_t n0 = std::min(N, blocks16 * t / threads * 16),
                        n1 = std::min(N, blocks16 * (t + 1) / threads * 16);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(n1 - n0), int(K), 1.f, x.data(), int(K),
                      w.data() + n0, int(N), 0.f, y.data() + n0, int(N));
        }
      };
      // oneDNN by rows (one packed W shared by the slices) and by 64-column blocks (each slice its own
      // packed W and a dense output buffer copied into C).
      Packed shared, shared_relu;
      std::vector<Packed> col_packed(threads);
      std::vector<dnnl::stream> streams;
      for (int t = 0; t < threads; ++t) streams.emplace_back(eng);
      std::vector<Slice> rows, rows_relu, cols;
      const int64_t blocks = (N + 63) / 64;
      for (int t = 0; t < threads; ++t) {
        const int64_t m0 = M * t / threads, m1 = M * (t + 1) / threads;
        rows.push_back(make_slice(eng, streams[t], M, K, N, m0, m1 - m0, 0, N, x.data(), w.data(), b.data(), y2.data(),
                                  false, &shared));
        rows_relu.push_back(make_slice(eng, streams[t], M, K, N, m0, m1 - m0, 0, N, x.data(), w.data(), b.data(),
                                       y2.data(), true, &shared_relu));
        const int64_t n0 = std::min(N, blocks * t / threads * 64), n1 = std::min(N, blocks * (t + 1) / threads * 64);
        if (threads > 1)
          cols.push_back(make_slice(eng, streams[t], M, K, N, 0, M, n0, n1 - n0, x.data(), w.data(), b.data(),
                                    y2.data(), false, &col_packed[t]));
      }
      auto dnn = [&](int t) { run_slice(rows[t], streams[t], N, y2.data()); };
      auto dnn_relu = [&](int t) { run_slice(rows_relu[t], streams[t], N, y2.data()); };
      auto dnn_cols = [&](int t) { run_slice(cols[t], streams[t], N, y2.data()); };
      const Stat tb = time_us(team, blas), td = time_us(team, dnn), tr = time_us(team, dnn_relu);
      const Stat tc = threads > 1 ? time_us(team, dnn_cols) : Stat{};
      char name[64];
      std::snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)M, (long long)K, (long long)N);
      auto cell = [](Stat s) {
        static char buf[4][32];
        static int i = 0;
        char* b = buf[i++ % 4];
        if (s.median == 0)
          std::snprintf(b, 32, "-");
        else
          std::snprintf(b, 32, "%.1f / %.1f", s.median, s.min);
        return b;
      };
      std::printf("%-16s %-3d %15s %15s %15s %15s  %s\n", name, threads, cell(tb), cell(td), cell(tr), cell(tc),
                  rows[0].impl.c_str());
    }
  }
}
