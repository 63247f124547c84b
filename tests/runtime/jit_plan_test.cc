// CPU_JIT through a Session: fused segments replay bit for bit like the unfused kernels, a second
// session on the same cache runs no compiler, broken or missing compilers leave correct outputs and
// say why, the swap allocates nothing, and sessions die safely while compiles are in flight.
#include "runtime/jit_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "../backend/cpu/jit/jit_test_util.h"
#include "../testing/heap_counter.h"
#include "backend/cpu/jit/jit_engine.h"
#include "runtime/introspection.h"
#include "runtime/session.h"

namespace sdx::runtime {
namespace {

using ir::TypeInfo;

Tensor floats(const std::vector<float>& v, Shape s) {
  Tensor t = Tensor::allocate(DType::kFloat32, std::move(s)).value();
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// x[rows, n] through a chain cycling over many fusible ops (constants of shape [n], [rows, 1] and
// scalars), with an intermediate also requested as a second output.
std::unique_ptr<Session> model(int ops, int64_t rows, int64_t n, SessionOptions opts) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *m.graph;
  ir::Value* v = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  std::vector<float> cv(static_cast<size_t>(n)), rv(static_cast<size_t>(rows));
  for (int64_t i = 0; i < n; ++i) cv[static_cast<size_t>(i)] = 0.75f + 0.013f * static_cast<float>(i);
  for (int64_t i = 0; i < rows; ++i) rv[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i + 1);
  ir::Value* c = g.add_initializer("c", floats(cv, Shape{n}));
  ir::Value* r = g.add_initializer("r", floats(rv, Shape{rows, 1}));
  ir::Value* s = g.add_initializer("s", floats({1.5f}, Shape{}));
  const char* kinds[] = {"Add", "Mul", "Sub", "Div", "LeakyRelu", "Max",
                         "Neg", "Min", "Sqrt", "Abs", "Log", "Relu", "Reciprocal", "Floor", "Ceil", "Sum"};
  ir::Value* mid = nullptr;
  for (int i = 0; i < ops; ++i) {
    const std::string op = kinds[i % (sizeof kinds / sizeof kinds[0])];
    std::vector<ir::Value*> ins = {v};
    if (op == "Add" || op == "Max") ins.push_back(c);
    if (op == "Mul" || op == "Min") ins.push_back(r);
    if (op == "Sub" || op == "Div" || op == "Sum") ins.push_back(s);
    ir::Node* node = g.add_node(op, "", "n" + std::to_string(i), ins, {i + 1 == ops ? "y" : "v" + std::to_string(i)});
    node->set_opset(17);
    if (op == "LeakyRelu") {
      ir::Attribute a;
      a.name = "alpha";
      a.type = ir::AttrType::kFloat;
      a.f = 0.3f;
      node->add_attribute(a);
    }
    v = node->output(0);
    if (i == ops / 2) mid = v;
  }
  g.add_output(v);
  if (mid && mid != v) g.add_output(mid);
  auto sess = Session::create(std::move(m), opts);
  EXPECT_TRUE(sess.is_ok()) << sess.status().to_string();
  return std::move(sess).value();
}

SessionOptions jit_options(const std::string& cache, const std::string& compiler = "", bool enabled = true) {
  SessionOptions o;
  o.jit.enabled = enabled;
  o.jit.cache_dir = cache;
  o.jit.compiler = compiler;
  // These tests check what a fused kernel computes, however fast it is (JitPlan.SlowerKernelStaysOut
  // checks the timing).
  o.jit.keep_only_faster = false;
  o.intra_op_num_threads = 1;
  return o;
}

struct Caller {
  std::unique_ptr<Context> ctx;
  Tensor x;
  std::vector<int64_t> dims;
  TensorArg arg;
  Caller(const Session& s, int64_t rows, int64_t n, float phase) : ctx(s.create_context()), dims{rows, n} {
    std::vector<float> xv(static_cast<size_t>(rows * n));
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(static_cast<float>(i) * 0.7f + phase) * 3.f;
    x = floats(xv, Shape{rows, n});
    arg = {DType::kFloat32, dims.data(), 2, x.raw_data()};
  }
  Status run(const Session& s, ExecutionReport* rep = nullptr) { return s.run(*ctx, &arg, 1, {}, rep); }
  std::vector<uint32_t> bits(size_t out = 0) const {
    const Tensor& t = ctx->output(out).as_tensor();
    std::vector<uint32_t> b(static_cast<size_t>(t.numel()));
    std::memcpy(b.data(), t.raw_data(), b.size() * 4);
    return b;
  }
};

std::string ctx_status(const Context& ctx) {
  std::string s;
  if (ctx.current() && ctx.current()->jit())
    for (const PlannedSegment& p : ctx.current()->jit()->segments) s += p.status() + "; ";
  return s;
}

bool has_compiler() { return jit::find_compiler("").is_ok(); }

TEST(JitPlan, FusedSegmentReplaysBitwiseLikeTheUnfusedKernels) {
  if (!has_compiler()) GTEST_SKIP() << "no C++ compiler";
  jit::test::TempDir tmp;
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 16}, {3, 37}}) {
    auto fused = model(57, rows, n, jit_options(tmp.path()));
    auto plain = model(57, rows, n, jit_options(tmp.path(), "", /*enabled=*/false));
    Caller a(*fused, rows, n, 0.f), b(*plain, rows, n, 0.f);
    ExecutionReport rep;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.run(*fused, &rep).is_ok());
    ASSERT_TRUE(fused->wait_for_jit(120));
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(a.run(*fused, &rep).is_ok());
      ASSERT_TRUE(b.run(*plain).is_ok());
      EXPECT_EQ(a.bits(0), b.bits(0)) << rows << "x" << n;
      EXPECT_EQ(a.bits(1), b.bits(1)) << rows << "x" << n;
    }
    EXPECT_EQ(rep.jit_segments, 1);
    EXPECT_EQ(rep.jit_fused_segments, 1) << ctx_status(*a.ctx);
    EXPECT_EQ(rep.jit_fused_steps, 57);
    EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
    // New input values through the fused kernel.
    Caller a2(*fused, rows, n, 1.3f), b2(*plain, rows, n, 1.3f);
    a.x = a2.x;
    a.arg.data = a2.x.raw_data();
    b.arg.data = b2.x.raw_data();
    ASSERT_TRUE(a.run(*fused).is_ok());
    ASSERT_TRUE(b.run(*plain).is_ok());
    EXPECT_EQ(a.bits(0), b.bits(0));
  }
}

// Softmax-like, written out: |x - max| lands in the memory of max (whose last reader is the Sub),
// which every element of the fused Sub+Abs reads: the kernel snapshots max before storing.
std::unique_ptr<Session> softmax_model(SessionOptions opts) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  auto node = [&](const char* op, std::vector<ir::Value*> in, const char* out, bool reduce = false) {
    ir::Node* n = g.add_node(op, "", out, in, {out});
    n->set_opset(17);
    if (reduce) {
      ir::Attribute axes;
      axes.name = "axes";
      axes.type = ir::AttrType::kInts;
      axes.ints = {1};
      n->add_attribute(axes);
    }
    return n->output(0);
  };
  ir::Value* mx = node("ReduceMax", {x}, "mx", true);
  ir::Value* e = node("Abs", {node("Sub", {x, mx}, "d")}, "e");
  ir::Value* y = node("Div", {e, node("ReduceSum", {e}, "sum", true)}, "y");
  g.add_output(y);
  return std::move(Session::create(std::move(m), opts)).value();
}

TEST(JitPlan, OutputsSharingMemoryWithBroadcastInputsStayCorrect) {
  if (!has_compiler()) GTEST_SKIP() << "no C++ compiler";
  jit::test::TempDir tmp;
  auto s = softmax_model(jit_options(tmp.path()));
  auto plain = softmax_model(jit_options(tmp.path(), "", false));
  for (int64_t n : {int64_t{3}, int64_t{1000}}) {
    Caller a(*s, 2, n, 0.f), b(*plain, 2, n, 0.f);
    ASSERT_TRUE(a.run(*s).is_ok());  // warmup
    ASSERT_TRUE(a.run(*s).is_ok());  // the signature again: freezes (the kernels compile) and captures
    ASSERT_TRUE(s->wait_for_jit(120));
    ExecutionReport rep;
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(a.run(*s, &rep).is_ok());
    ASSERT_TRUE(b.run(*plain).is_ok());
    EXPECT_EQ(rep.jit_fused_segments, 1) << ctx_status(*a.ctx);
    EXPECT_EQ(a.bits(), b.bits()) << n;
  }
}

TEST(JitPlan, SecondSessionFindsEveryKernelInTheDiskCacheAndRunsNoCompiler) {
  jit::test::TempDir tmp;
  const std::string log = tmp.path() + "/compiler.log";
  const std::string cxx = jit::test::recording_compiler(tmp.path(), log);
  if (cxx.empty()) GTEST_SKIP() << "no C++ compiler";
  std::vector<uint32_t> first;
  {
    auto s = model(30, 2, 8, jit_options(tmp.path() + "/cache", cxx));
    Caller a(*s, 2, 8, 0.f);
    ASSERT_TRUE(a.run(*s).is_ok());  // warmup
    ASSERT_TRUE(a.run(*s).is_ok());  // freeze (the kernels compile) and capture
    ASSERT_TRUE(s->wait_for_jit(120));
    ExecutionReport rep;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.run(*s, &rep).is_ok());
    EXPECT_EQ(rep.jit_fused_segments, rep.jit_segments);
    EXPECT_GT(s->jit()->stats().compiled, 0);
    first = a.bits();
  }
  const int runs = jit::test::count_lines(log);
  EXPECT_GT(runs, 0);
  auto s = model(30, 2, 8, jit_options(tmp.path() + "/cache", cxx));
  Caller a(*s, 2, 8, 0.f);
  ExecutionReport rep;
  ASSERT_TRUE(a.run(*s, &rep).is_ok());  // warmup
  ASSERT_TRUE(a.run(*s, &rep).is_ok());  // the signature again: freezes, finds the kernels, captures
  EXPECT_GT(s->jit()->stats().requests, 0);
  EXPECT_EQ(s->jit()->stats().disk_cache_hits, s->jit()->stats().requests);
  ASSERT_TRUE(a.run(*s, &rep).is_ok());  // first replay: checked and swapped in
  EXPECT_EQ(rep.jit_fused_segments, rep.jit_segments);
  EXPECT_GT(rep.jit_fused_segments, 0);
  EXPECT_EQ(s->jit()->stats().compiler_runs, 0);
  EXPECT_EQ(s->jit()->stats().compiled, 0);
  EXPECT_EQ(jit::test::count_lines(log), runs);  // the compiler never ran
  EXPECT_EQ(a.bits(), first);
}

TEST(JitPlan, BrokenOrMissingCompilerKeepsCorrectOutputsAndSaysWhy) {
  jit::test::TempDir tmp;
  auto plain = model(20, 2, 5, jit_options(tmp.path(), "", false));
  Caller b(*plain, 2, 5, 0.f);
  ASSERT_TRUE(b.run(*plain).is_ok());
  for (const char* compiler : {"/bin/false", "/nonexistent/sdx-c++"}) {
    auto s = model(20, 2, 5, jit_options(tmp.path(), compiler));
    Caller a(*s, 2, 5, 0.f);
    ExecutionReport rep;
    ASSERT_TRUE(a.run(*s, &rep).is_ok());  // warmup
    ASSERT_TRUE(a.run(*s, &rep).is_ok());  // freeze (the compiler is asked) and capture
    ASSERT_TRUE(s->wait_for_jit(60));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.run(*s, &rep).is_ok());
    EXPECT_EQ(a.bits(), b.bits()) << compiler;
    EXPECT_EQ(rep.jit_segments, 1);
    EXPECT_EQ(rep.jit_fused_segments, 0);
    EXPECT_EQ(rep.jit_failed_segments, 1);
    EXPECT_EQ(rep.captured_steps, 20);
    Result<PlanIntrospection> info = introspect(*s, {{"x", Datum::tensor(a.x)}});
    ASSERT_TRUE(info.is_ok());
    ASSERT_EQ(info.value().jit_segments.size(), 1u);
    EXPECT_EQ(info.value().jit_segments[0].state, "FAILED");
    EXPECT_NE(info.value().jit_segments[0].status.find(compiler), std::string::npos) << info.value().jit_segments[0].status;
    EXPECT_NE(format_introspection(info.value()).find("FAILED"), std::string::npos);
  }
}

TEST(JitPlan, ThresholdAndKillSwitch) {
  jit::test::TempDir tmp;
  SessionOptions high = jit_options(tmp.path(), "/nonexistent/never-run");
  high.jit.fusion_score_threshold = 1.5;  // nothing scores that high
  auto s = model(10, 1, 16, high);
  Caller a(*s, 1, 16, 0.f);
  ExecutionReport rep;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.run(*s, &rep).is_ok());
  EXPECT_EQ(rep.jit_segments, 1);
  EXPECT_EQ(rep.jit_failed_segments, 0);  // never requested, so the missing compiler is no failure
  EXPECT_EQ(a.ctx->current()->jit()->segments[0].state(), jit::SegmentState::kBelowThreshold);
  EXPECT_EQ(a.ctx->current()->jit()->count(jit::SegmentState::kBelowThreshold), 1);
  EXPECT_STREQ(jit::segment_state_name(a.ctx->current()->jit()->segments[0].state()), "BELOW_THRESHOLD");
  auto off = model(10, 1, 16, jit_options(tmp.path(), "", false));
  EXPECT_EQ(off->jit(), nullptr);
  Result<PlanIntrospection> info = introspect(*off, {{"x", Datum::tensor(a.x)}});
  ASSERT_TRUE(info.is_ok());
  EXPECT_NE(format_introspection(info.value()).find("jit: off"), std::string::npos);
}

TEST(JitPlan, SwappingAndFusedReplaysAllocateNothing) {
  if (!has_compiler()) GTEST_SKIP() << "no C++ compiler";
  jit::test::TempDir tmp;
  auto s = model(12, 1, 16, jit_options(tmp.path()));
  Caller a(*s, 1, 16, 0.f);
  ASSERT_TRUE(a.run(*s).is_ok());
  ASSERT_TRUE(a.run(*s).is_ok());  // captured, armed
  ASSERT_TRUE(s->wait_for_jit(120));
  const uint64_t before = test::heap_allocations();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a.run(*s).is_ok());  // the first of these swaps
  EXPECT_EQ(test::heap_allocations() - before, 0u);
  ExecutionReport rep;
  ASSERT_TRUE(a.run(*s, &rep).is_ok());
  EXPECT_EQ(rep.jit_fused_segments, 1);
}

TEST(JitPlanConcurrency, ContextsReplayWhileKernelsCompileAndSwap) {
  if (!has_compiler()) GTEST_SKIP() << "no C++ compiler";
  jit::test::TempDir tmp;
  auto s = model(40, 2, 8, jit_options(tmp.path()));
  auto plain = model(40, 2, 8, jit_options(tmp.path(), "", false));
  Caller ref(*plain, 2, 8, 0.f);
  ASSERT_TRUE(ref.run(*plain).is_ok());
  const std::vector<uint32_t> want = ref.bits();
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      Caller a(*s, 2, 8, 0.f);
      for (int i = 0; i < 200; ++i) {
        if (!a.run(*s).is_ok() || a.bits() != want) mismatches.fetch_add(1, std::memory_order_relaxed);
        if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(JitPlanConcurrency, SessionDestroyedWhileCompiling) {
  jit::test::TempDir tmp;
  const std::string slow = tmp.path() + "/slow-c++";
  std::ofstream(slow) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'slow c++ 1.0'; exit 0; fi\nexec sleep 60\n";
  chmod(slow.c_str(), 0755);
  const auto t0 = std::chrono::steady_clock::now();
  {
    auto s = model(10, 1, 16, jit_options(tmp.path(), slow));
    Caller a(*s, 1, 16, 0.f);
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(a.run(*s).is_ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
}

}  // namespace
}  // namespace sdx::runtime
