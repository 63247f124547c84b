// The fallbacks and decisions sessions record into obs::Diagnostics::global().
#include <gtest/gtest.h>

#include <chrono>

#if defined(__linux__)
#include "../testing/pinned_thread.h"
#endif

#include "backend/cpu/threading/thread_pool.h"
#include "obs/diagnostics.h"
#include "runtime/session.h"
#include "runtime/shape_variety.h"

namespace sdx::runtime {
namespace {

std::unique_ptr<Session> relu_chain(SessionOptions o = {}) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* v = m.graph->add_input("x", ir::TypeInfo::tensor(DType::kFloat32));
  for (const char* op : {"Relu", "Neg", "Abs"}) {
    ir::Node* n = m.graph->add_node(op, "", op, {v}, {std::string(op) + "_out"});
    n->set_opset(17);
    v = n->output(0);
  }
  m.graph->add_output(v);
  return std::move(Session::create(std::move(m), o)).value();
}

class SessionDiagnostics : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& d = obs::Diagnostics::global();
    d.reset();
    d.enable_all(obs::DiagLevel::kDetailed);
  }
  void TearDown() override {
    auto& d = obs::Diagnostics::global();
    d.enable_all(obs::DiagLevel::kOff);
    d.reset();
  }
  static Status run(const Session& s, Context& ctx, int64_t n) {
    Tensor x = Tensor::allocate(DType::kFloat32, Shape{1, n}, cpu_allocator(), true).value();
    const int64_t dims[] = {1, n};
    TensorArg arg{DType::kFloat32, dims, 2, x.raw_data()};
    return s.run(ctx, &arg, 1);
  }
};

TEST_F(SessionDiagnostics, NewSignaturesCaptureAndColoringAreRecorded) {
  auto s = relu_chain();
  auto ctx = s->create_context();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(run(*s, *ctx, 8).is_ok());
  ASSERT_TRUE(run(*s, *ctx, 16).is_ok());  // a second signature
  auto& d = obs::Diagnostics::global();
  EXPECT_EQ(d.count(obs::DiagCategory::kFallback, "NEW_SHAPE_SIGNATURE"), 2u);
  EXPECT_EQ(d.count(obs::DiagCategory::kCapture, "CAPTURED"), 1u);
  // [1, 8] froze on its second call; [1, 16], seen once, never froze (no frozen memory for a one-off shape).
  EXPECT_EQ(d.count(obs::DiagCategory::kColoring, "COLORING_DONE"), 1u);
  EXPECT_EQ(d.count(obs::DiagCategory::kWarmup, "WARMUP_RUN"), 2u);
  auto ev = d.events(obs::DiagCategory::kFallback);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_NE(ev[1].detail.find("x [1, 16]"), std::string::npos) << ev[1].detail;
  EXPECT_NE(d.to_json().find("\"COLORING\""), std::string::npos);
}

TEST_F(SessionDiagnostics, ManySignaturesSayWhichDimsVaryAndWhatPadsThem) {
  auto s = relu_chain();
  auto ctx = s->create_context();
  auto& d = obs::Diagnostics::global();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(run(*s, *ctx, 8).is_ok());  // one signature, however many calls
  for (int64_t n = 9; n < 9 + ShapeVariety::kManySignatures - 2; ++n) ASSERT_TRUE(run(*s, *ctx, n).is_ok());
  EXPECT_EQ(d.count(obs::DiagCategory::kFallback, "SHAPES_VARY"), 0u);
  for (int64_t n = 40; n < 44; ++n) ASSERT_TRUE(run(*s, *ctx, n).is_ok());  // the 8th signature, then more
  ASSERT_EQ(d.count(obs::DiagCategory::kFallback, "SHAPES_VARY"), 1u);  // said once
  std::string said;
  for (const auto& e : d.events(obs::DiagCategory::kFallback))
    if (e.name == "SHAPES_VARY") said = e.detail;
  EXPECT_NE(said.find("8 input-shape signatures"), std::string::npos) << said;
  EXPECT_NE(said.find("(x axis 1): 8 sizes, 8..40"), std::string::npos) << said;  // axis 0 (always 1) is not listed
  EXPECT_EQ(said.find("axis 0"), std::string::npos) << said;
  EXPECT_NE(said.find("shape_buckets"), std::string::npos) << said;
  // A session that pads by itself does not say it.
  d.reset();
  SessionOptions o;
  o.shape_buckets = {"n=4"};
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", ir::TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::fixed(1), ir::Dim::symbolic("n")}));
  ir::Node* relu = m.graph->add_node("Relu", "", "relu", {x}, {"y"});
  relu->set_opset(17);
  m.graph->add_output(relu->output(0));
  auto padded = std::move(Session::create(std::move(m), o)).value();
  auto pctx = padded->create_context();
  for (int64_t n = 1; n <= 40; n += 4) ASSERT_TRUE(run(*padded, *pctx, n).is_ok());
  EXPECT_EQ(d.count(obs::DiagCategory::kFallback, "SHAPES_VARY"), 0u);
}

TEST_F(SessionDiagnostics, EvictionsAndAFailingJitAreFallbacksWithTheirReason) {
  SessionOptions o;
  o.plan_cache_max_count = 1;
  o.jit.compiler = "/nonexistent/c++";  // the Relu/Neg/Abs segment cannot be compiled
  o.jit.fusion_score_threshold = 0;
  auto s = relu_chain(o);
  auto ctx = s->create_context();
  for (int n : {8, 16, 8})
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(run(*s, *ctx, n).is_ok());
  s->wait_for_jit(60);
  auto& d = obs::Diagnostics::global();
  EXPECT_GE(d.count(obs::DiagCategory::kFallback, "EVICTION"), 1u);
  EXPECT_GE(d.count(obs::DiagCategory::kCache, "EVICTED"), 1u);
  EXPECT_GE(d.count(obs::DiagCategory::kFallback, "JIT_FAILED"), 1u);
  bool named = false;
  for (const auto& e : d.events(obs::DiagCategory::kFallback))
    named |= e.name == "JIT_FAILED" && e.detail.find("/nonexistent/c++") != std::string::npos;
  EXPECT_TRUE(named) << d.to_json();
}

#if defined(__linux__)
// A worker the scheduler left on the calling thread's CPU moves off it, and the session says so.
TEST_F(SessionDiagnostics, PoolWorkerOnTheCallersCpuIsReported) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  o.jit.enabled = false;
  auto s = relu_chain(o);
  auto ctx = s->create_context();
  ASSERT_NE(s->thread_pool(), nullptr);
  test::PinnedThread pin;  // the caller, on one CPU; the worker put there too
  if (pin.cpus_before() < 2) GTEST_SKIP() << "needs at least 2 CPUs this thread may run on";
  ASSERT_TRUE(pin.ok());
  ASSERT_TRUE(s->thread_pool()->place_workers_for_testing(pin.cpu()));
  // 1M floats: every op splits over the pool.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s->thread_pool()->colocation_moves() == 0 && std::chrono::steady_clock::now() < deadline)
    ASSERT_TRUE(run(*s, *ctx, 1 << 20).is_ok());
  ASSERT_TRUE(run(*s, *ctx, 1 << 20).is_ok());  // reported by the call after the move at the latest
  auto& d = obs::Diagnostics::global();
  EXPECT_GE(s->thread_pool()->colocation_moves(), 1u);
  EXPECT_GE(d.count(obs::DiagCategory::kLatency, "POOL_WORKER_MOVED"), 1u) << d.to_json();
  for (const auto& e : d.events(obs::DiagCategory::kLatency))
    if (e.name == "POOL_WORKER_MOVED") EXPECT_NE(e.detail.find("calling thread's CPU"), std::string::npos) << e.detail;
}
#endif

}  // namespace
}  // namespace sdx::runtime
