// The captured half of the plan lifecycle: SHAPES_FROZEN -> CAPTURED -> REPLAYING, gaps,
// divergence, the plan cache's passivation, variables, and concurrent contexts.
#include "runtime/replay.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "../testing/heap_counter.h"
#include "obs/op_timing_tracker.h"
#include "runtime/session.h"

namespace sdx::runtime {
namespace {

using ir::TypeInfo;

Tensor floats(std::vector<float> v, Shape s) {
  Tensor t = Tensor::allocate(DType::kFloat32, std::move(s)).value();
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// x[1,n] -> (Add c, Mul c, Relu, Neg, Sub c, Abs) repeated -> y
std::unique_ptr<Session> chain(int ops, int64_t n, SessionOptions opts = {}) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* v = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  std::vector<float> cv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) cv[static_cast<size_t>(i)] = 0.25f + 0.01f * static_cast<float>(i);
  ir::Value* c = m.graph->add_initializer("c", floats(cv, Shape{n}));
  const char* kinds[] = {"Add", "Mul", "Relu", "Neg", "Sub", "Abs"};
  for (int i = 0; i < ops; ++i) {
    const std::string op = kinds[i % 6];
    std::vector<ir::Value*> ins = {v};
    if (op == "Add" || op == "Mul" || op == "Sub") ins.push_back(c);
    ir::Node* node = m.graph->add_node(op, "", "n" + std::to_string(i), ins, {i + 1 == ops ? "y" : "v" + std::to_string(i)});
    node->set_opset(17);
    v = node->output(0);
  }
  m.graph->add_output(v);
  return std::move(Session::create(std::move(m), opts)).value();
}

std::vector<float> values_of(const Datum& d) {
  const Tensor& t = d.as_tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(Replay, LifecyclePhasesReportsAndStates) {
  auto s = chain(12, 16);
  auto ctx = s->create_context();
  Tensor x = floats(std::vector<float>(16, 0.5f), Shape{1, 16});
  const int64_t dims[] = {1, 16};
  TensorArg arg{DType::kFloat32, dims, 2, x.raw_data()};
  ExecutionReport rep;
  EXPECT_EQ(ctx->phase(), PlanPhase::kWarmup);
  ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());
  // The warmup call records the shapes; the plan freezes when the signature comes again.
  EXPECT_EQ(rep.phase, PlanPhase::kWarmup);
  EXPECT_EQ(rep.mode_used, ExecutionMode::kSlotBySlot);
  EXPECT_STREQ(rep.fallback_reason, "warming up: recording shapes");
  EXPECT_EQ(rep.peak_memory_bytes, 0);  // no frozen memory for a signature seen once
  const std::vector<float> warm = values_of(ctx->output(0));
  EXPECT_EQ(ctx->current()->slot_state(0), SlotState::kWarmup);
  ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());  // freeze, then capture
  EXPECT_EQ(rep.phase, PlanPhase::kCaptured);
  EXPECT_EQ(ctx->current()->slot_state(0), SlotState::kCapturing);
  EXPECT_EQ(values_of(ctx->output(0)), warm);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());
  EXPECT_EQ(rep.phase, PlanPhase::kReplaying);
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
  EXPECT_EQ(rep.fallback_reason, nullptr);
  EXPECT_EQ(rep.replay_count, 5);
  EXPECT_EQ(rep.call_count, 7);
  EXPECT_EQ(rep.slot_count, 12 + 2);  // x, c and one slot per op
  EXPECT_EQ(rep.captured_steps, 12);
  EXPECT_EQ(rep.gap_steps + rep.slot_by_slot_steps, 0);
  EXPECT_GT(rep.avg_latency_us, 0);
  EXPECT_GT(rep.peak_memory_bytes, 0);
  EXPECT_EQ(ctx->current()->slot_state(3), SlotState::kReplaying);
  EXPECT_EQ(values_of(ctx->output(0)), warm);
  for (NodePhase p : ctx->current()->replay()->node_phases()) EXPECT_EQ(p, NodePhase::kCaptured);
}

TEST(Replay, SteadyStateReplayMakesNoHeapAllocations) {
  auto s = chain(60, 16);
  auto ref = chain(60, 16, [] {
    SessionOptions o;
    o.execution_mode = ExecutionMode::kSlotBySlot;
    return o;
  }());
  auto ctx = s->create_context();
  Tensor x = floats(std::vector<float>(16, 0.f), Shape{1, 16});
  const int64_t dims[] = {1, 16};
  TensorArg arg{DType::kFloat32, dims, 2, x.raw_data()};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  ASSERT_EQ(ctx->phase(), PlanPhase::kReplaying);
  ASSERT_EQ(ctx->current()->replay()->num_bound(), 60) << "every step should have a bound form";
  ExecutionReport rep;
  const uint64_t heap_before = test::heap_allocations();
  const uint64_t tensors_before = cpu_allocation_count();
  for (int i = 0; i < 100; ++i) {
    x.data<float>()[i % 16] = static_cast<float>(i) * 0.1f - 3.f;
    Status st = s->run(*ctx, &arg, 1, {}, &rep);
    if (!st.is_ok()) FAIL() << st.to_string();
  }
  EXPECT_EQ(test::heap_allocations() - heap_before, 0u);
  EXPECT_EQ(cpu_allocation_count() - tensors_before, 0u);
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
  auto want = ref->run({{"x", Datum::tensor(x)}});
  ASSERT_TRUE(want.is_ok());
  EXPECT_EQ(values_of(ctx->output(0)), values_of(want.value()[0]));  // bitwise
}

// a = Relu(x); nz = NonZero(a) (gap); f = Cast(nz) (reads a gap: slot by slot); b = Neg(a) (captured)
std::unique_ptr<Session> with_gap(SessionOptions opts = {}) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  auto add = [&](const std::string& op, std::vector<ir::Value*> ins, const std::string& out) {
    ir::Node* n = m.graph->add_node(op, "", op + "_" + out, ins, {out});
    n->set_opset(17);
    return n;
  };
  ir::Value* a = add("Relu", {x}, "a")->output(0);
  ir::Value* nz = add("NonZero", {a}, "nz")->output(0);
  ir::Node* cast = add("Cast", {nz}, "f");
  ir::Attribute to;
  to.name = "to";
  to.type = ir::AttrType::kInt;
  to.i = static_cast<int64_t>(1);  // FLOAT
  cast->add_attribute(to);
  ir::Value* b = add("Neg", {a}, "b")->output(0);
  m.graph->add_output(cast->output(0));
  m.graph->add_output(b);
  return std::move(Session::create(std::move(m), opts)).value();
}

TEST(Replay, GapStepsRunEagerlyBetweenCapturedOnes) {
  auto s = with_gap();
  SessionOptions slow;
  slow.execution_mode = ExecutionMode::kSlotBySlot;
  auto ref = with_gap(slow);
  auto ctx = s->create_context();
  const int64_t dims[] = {8};
  for (int call = 0; call < 12; ++call) {
    std::vector<float> xv(8);
    for (int i = 0; i < 8; ++i) xv[static_cast<size_t>(i)] = static_cast<float>((i * 5 + call * 3) % 7) - 3.f;
    Tensor x = floats(xv, Shape{8});
    TensorArg arg{DType::kFloat32, dims, 1, x.raw_data()};
    ExecutionReport rep;
    ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());
    auto want = ref->run({{"x", Datum::tensor(x)}});
    ASSERT_TRUE(want.is_ok());
    EXPECT_EQ(ctx->output(0).as_tensor().shape(), want.value()[0].as_tensor().shape()) << "call " << call;
    EXPECT_EQ(values_of(ctx->output(0)), values_of(want.value()[0])) << "call " << call;
    EXPECT_EQ(values_of(ctx->output(1)), values_of(want.value()[1])) << "call " << call;
    if (call >= 2) {
      EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
      EXPECT_EQ(rep.gap_steps, 1);
      EXPECT_EQ(rep.slot_by_slot_steps, 1);
      EXPECT_EQ(rep.captured_steps, 2);
    }
  }
  const auto& phases = ctx->current()->replay()->node_phases();
  ASSERT_EQ(phases.size(), 4u);
  EXPECT_EQ(phases[0], NodePhase::kCaptured);    // Relu
  EXPECT_EQ(phases[1], NodePhase::kGap);         // NonZero
  EXPECT_EQ(phases[2], NodePhase::kSlotBySlot);  // Cast of the gap's output
  EXPECT_EQ(phases[3], NodePhase::kCaptured);    // Neg
}

// y = ReduceSum(x, axes) with axes fed as an input (opset 18): the output shape follows its values.
TEST(Replay, ValueDependentShapeStopsReplayInsteadOfUsingStaleBuffers) {
  ir::Model m;
  m.opsets[""] = 18;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  ir::Value* axes = m.graph->add_input("axes", TypeInfo::tensor(DType::kInt64));
  ir::Node* r = m.graph->add_node("ReduceSum", "", "sum", {x, axes}, {"y"});
  r->set_opset(18);
  ir::Node* n = m.graph->add_node("Neg", "", "neg", {r->output(0)}, {"z"});
  n->set_opset(18);
  m.graph->add_output(n->output(0));
  auto s = std::move(Session::create(std::move(m))).value();
  auto ctx = s->create_context();
  Tensor xv = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const int64_t xd[] = {2, 3}, ad[] = {1};
  int64_t axis = 1;
  TensorArg args[] = {{DType::kFloat32, xd, 2, xv.raw_data()}, {DType::kInt64, ad, 1, &axis}};
  ExecutionReport rep;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s->run(*ctx, args, 2, {}, &rep).is_ok());
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
  EXPECT_EQ(values_of(ctx->output(0)), (std::vector<float>{-6, -15}));
  axis = 0;  // same input shapes, another output shape
  ASSERT_TRUE(s->run(*ctx, args, 2, {}, &rep).is_ok());
  EXPECT_EQ(ctx->output(0).as_tensor().shape(), (Shape{1, 3}));
  EXPECT_EQ(values_of(ctx->output(0)), (std::vector<float>{-5, -7, -9}));
  EXPECT_EQ(rep.mode_used, ExecutionMode::kSlotBySlot);
  ASSERT_NE(rep.fallback_reason, nullptr);
  axis = 1;
  ASSERT_TRUE(s->run(*ctx, args, 2, {}, &rep).is_ok());
  EXPECT_EQ(values_of(ctx->output(0)), (std::vector<float>{-6, -15}));
}

TEST(Replay, PassivationUnderMemoryPressureKeepsResultsRight) {
  SessionOptions opts;
  opts.plan_cache_memory_budget_bytes = 6000;  // about one plan of a [256]-float chain
  auto s = chain(6, 256, opts);
  SessionOptions slow;
  slow.execution_mode = ExecutionMode::kSlotBySlot;
  auto ref = chain(6, 256, slow);
  auto a = s->create_context(), b = s->create_context();
  std::vector<float> xv(256);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 17) - 8.f;
  Tensor x = floats(xv, Shape{1, 256});
  const int64_t dims[] = {1, 256};
  TensorArg arg{DType::kFloat32, dims, 2, x.raw_data()};
  auto want = values_of(ref->run({{"x", Datum::tensor(x)}}).value()[0]);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(s->run(*a, &arg, 1).is_ok());
    EXPECT_EQ(values_of(a->output(0)), want);
    ASSERT_TRUE(s->run(*b, &arg, 1).is_ok());
    EXPECT_EQ(values_of(b->output(0)), want);
  }
  const PlanCacheStats st = s->cache_stats();
  EXPECT_GT(st.passivations, 0);
  EXPECT_LE(st.frozen_bytes, 6000);
  EXPECT_GT(st.pool.hits, 0);  // re-freezing found its blocks in the pool
}

TEST(Replay, ExplicitFreezeAndVariables) {
  SessionOptions opts;
  opts.warmup_runs = 5;
  auto s = chain(3, 4, opts);  // Add c, Mul c, Relu
  auto ctx = s->create_context();
  EXPECT_EQ(s->freeze_shapes(*ctx).code(), StatusCode::kFailedPrecondition);
  Tensor x = floats({1, 2, 3, 4}, Shape{4});
  const int64_t dims[] = {4};
  TensorArg arg{DType::kFloat32, dims, 1, x.raw_data()};
  ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  EXPECT_EQ(ctx->phase(), PlanPhase::kWarmup);
  ASSERT_TRUE(s->freeze_shapes(*ctx).is_ok());
  EXPECT_EQ(ctx->phase(), PlanPhase::kShapesFrozen);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  EXPECT_EQ(ctx->phase(), PlanPhase::kReplaying);
  // c := 1: y = (x + 1) * 1
  ASSERT_TRUE(s->set_variable(*ctx, "c", floats({1, 1, 1, 1}, Shape{4})).is_ok());
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());  // plans dropped: 5 warmups again
  EXPECT_EQ(values_of(ctx->output(0)), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(ctx->phase(), PlanPhase::kReplaying);
  // Same shape: new values at the same address, the captured plan keeps replaying.
  ASSERT_TRUE(s->set_variable(*ctx, "c", floats({2, 2, 2, 2}, Shape{4})).is_ok());
  ExecutionReport rep;
  ASSERT_TRUE(s->run(*ctx, &arg, 1, {}, &rep).is_ok());
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
  EXPECT_EQ(values_of(ctx->output(0)), (std::vector<float>{6, 8, 10, 12}));
  EXPECT_EQ(s->set_variable(*ctx, "x", x).code(), StatusCode::kInvalidArgument);
  Tensor i64 = Tensor::allocate(DType::kInt64, Shape{4}).value();
  EXPECT_EQ(s->set_variable(*ctx, "c", i64).code(), StatusCode::kInvalidArgument);
}

TEST(Replay, PositionalInputsAreValidated) {
  auto s = chain(2, 4);
  auto ctx = s->create_context();
  Tensor x = floats({1, 2, 3, 4}, Shape{4});
  const int64_t dims[] = {4}, bad[] = {-1};
  TensorArg ok{DType::kFloat32, dims, 1, x.raw_data()};
  EXPECT_NE(s->run(*ctx, &ok, 0).message().find("takes 1 inputs"), std::string::npos);
  TensorArg wrong_type{DType::kInt32, dims, 1, x.raw_data()};
  EXPECT_NE(s->run(*ctx, &wrong_type, 1).message().find("input 'x': expected element type float"), std::string::npos);
  TensorArg negative{DType::kFloat32, bad, 1, x.raw_data()};
  EXPECT_NE(s->run(*ctx, &negative, 1).message().find("negative dimension"), std::string::npos);
  TensorArg null_data{DType::kFloat32, dims, 1, nullptr};
  EXPECT_NE(s->run(*ctx, &null_data, 1).message().find("data is null"), std::string::npos);
  EXPECT_NE(s->run(*ctx, &ok, 1, {3}).message().find("output position 3"), std::string::npos);
}

TEST(Replay, ConcurrentContextsAndPooledRunsMatchSingleThreaded) {
  auto s = chain(24, 16);
  SessionOptions slow;
  slow.execution_mode = ExecutionMode::kSlotBySlot;
  auto ref = chain(24, 16, slow);
  auto input = [](int rows, int seed) {
    std::vector<float> v(static_cast<size_t>(rows * 16));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((seed * 7 + static_cast<int>(i) * 13) % 11) - 5.f;
    return floats(v, Shape{rows, 16});
  };
  std::vector<std::vector<float>> want;
  for (int seed = 0; seed < 16; ++seed) want.push_back(values_of(ref->run({{"x", Datum::tensor(input(1 + seed % 2, seed))}}).value()[0]));
  std::atomic<int> failures{0}, replays{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<Context> ctx = t % 2 == 0 ? s->create_context() : nullptr;
      for (int i = 0; i < 1000; ++i) {
        const int seed = (t + i) % 16;
        Tensor x = input(1 + seed % 2, seed);
        std::vector<float> got;
        if (ctx) {  // own context, positional
          ExecutionReport rep;
          TensorArg arg{DType::kFloat32, x.shape().dims().data(), 2, x.raw_data()};
          if (!s->run(*ctx, &arg, 1, {}, &rep).is_ok()) {
            ++failures;
            continue;
          }
          if (rep.mode_used == ExecutionMode::kCpuReplay) ++replays;
          got = values_of(ctx->output(0));
        } else {  // the session's pooled contexts
          auto out = s->run({{"x", Datum::tensor(x)}});
          if (!out.is_ok()) {
            ++failures;
            continue;
          }
          got = values_of(out.value()[0]);
        }
        if (got != want[static_cast<size_t>(seed)]) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(replays.load(), 3000);
}

}  // namespace
}  // namespace sdx::runtime

namespace sdx::runtime {
namespace {

// w and c are read by MatMul+Add, which LinearFusion turns into one sdx.Linear: their readers change,
// so they are no longer variables; s, an initializer that is also a graph input, stays overridable.
TEST(Replay, VariablesTheOptimizerFoldedAreRefused) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input(
      "x", ir::TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::fixed(2), ir::Dim::fixed(2)}));
  ir::Value* w = m.graph->add_initializer("w", floats({1, 2, 3, 4}, Shape{2, 2}));
  ir::Value* c = m.graph->add_initializer("c", floats({1, 1}, Shape{2}));
  ir::Value* sv = m.graph->add_input("s", ir::TypeInfo::tensor(DType::kFloat32));
  m.graph->add_initializer("s", floats({2, 2}, Shape{2}));
  ir::Node* mm = m.graph->add_node("MatMul", "", "mm", {x, w}, {"t"});
  mm->set_opset(17);
  ir::Node* add = m.graph->add_node("Add", "", "add", {mm->output(0), c}, {"u"});
  add->set_opset(17);
  ir::Node* mul = m.graph->add_node("Mul", "", "mul", {add->output(0), sv}, {"y"});
  mul->set_opset(17);
  m.graph->add_output(mul->output(0));
  auto s = std::move(Session::create(std::move(m))).value();
  ASSERT_EQ(s->optimization().rewrites_of("LinearFusionOptimizations"), 1);
  auto ctx = s->create_context();
  const Status st = s->set_variable(*ctx, "w", floats({0, 0, 0, 0}, Shape{2, 2}));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("graph optimizer"), std::string::npos);
  EXPECT_TRUE(s->set_variable(*ctx, "s", floats({5, 5}, Shape{2})).is_ok());
}

}  // namespace
}  // namespace sdx::runtime

namespace sdx::runtime {
namespace {

// x[rows, 1024] -> `branches` independent chains (Mul c_i, Sigmoid, Add c_i, Tanh) -> Sum -> y;
// plus a gap (NonZero) on branch 0's first output, so one wave mixes eager and bound steps.
std::unique_ptr<Session> branches(int count, int64_t rows, SessionOptions opts, bool gap = false) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  auto add = [&](const std::string& op, std::vector<ir::Value*> ins, const std::string& out) {
    ir::Node* n = m.graph->add_node(op, "", op + "_" + out, ins, {out});
    n->set_opset(17);
    return n->output(0);
  };
  std::vector<ir::Value*> ends;
  for (int b = 0; b < count; ++b) {
    const std::string p = "b" + std::to_string(b) + "_";
    ir::Value* c = m.graph->add_initializer(p + "c", floats({0.5f + 0.25f * static_cast<float>(b)}, Shape{1}));
    ir::Value* v = add("Mul", {x, c}, p + "mul");
    if (gap && b == 0) m.graph->add_output(add("NonZero", {v}, "nz"));
    v = add("Sigmoid", {v}, p + "sig");
    v = add("Add", {v, c}, p + "add");
    ends.push_back(add("Tanh", {v}, p + "tanh"));
  }
  m.graph->add_output(add("Sum", ends, "y"));
  return std::move(Session::create(std::move(m), opts)).value();
}

SessionOptions inter_op(int threads) {
  SessionOptions o;
  o.inter_op_num_threads = threads;
  o.jit.enabled = false;  // the JIT would fuse a wave's elementwise steps into one kernel
  return o;
}

// Replaying waves concurrently gives the bits of the sequential replay: each step's kernel computes
// the same whatever thread it runs on. Also run under ThreadSanitizer (the name has "Concurren").
TEST(InterOp, ConcurrentWavesMatchSequentialReplayBitwise) {
  for (bool gap : {false, true}) {
    auto par = branches(5, 64, inter_op(2), gap);
    auto seq = branches(5, 64, inter_op(1), gap);
    Tensor x = Tensor::allocate(DType::kFloat32, Shape{64, 1024}).value();
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 977) * 0.01f - 4.f;
    auto pctx = par->create_context(), sctx = seq->create_context();
    const int64_t dims[] = {64, 1024};
    TensorArg arg{DType::kFloat32, dims, 2, x.raw_data()};
    for (int i = 0; i < 6; ++i) {
      x.data<float>()[i] = static_cast<float>(i);  // new values each call
      ASSERT_TRUE(par->run(*pctx, &arg, 1).is_ok());
      ASSERT_TRUE(seq->run(*sctx, &arg, 1).is_ok());
      const size_t y = pctx->num_outputs() - 1;
      ASSERT_EQ(values_of(pctx->output(y)), values_of(sctx->output(y))) << "call " << i << " gap " << gap;
    }
    ASSERT_EQ(pctx->phase(), PlanPhase::kReplaying);
    const ReplayHandle& h = *pctx->current()->replay();
    // Waves: Mul x5 | Sigmoid x5 (+ NonZero) | Add x5 | Tanh x5 | Sum; four of them run concurrently.
    EXPECT_EQ(h.num_concurrent_groups(), 4) << "gap " << gap;
    EXPECT_EQ(h.num_concurrent_steps(), 20) << "gap " << gap;
    EXPECT_EQ(seq->run(*sctx, &arg, 1).is_ok(), true);
    EXPECT_EQ(sctx->current()->replay()->num_concurrent_groups(), 0);
  }
}

TEST(InterOp, SteadyStateConcurrentReplayMakesNoHeapAllocations) {
  auto s = branches(4, 8, inter_op(2));
  auto ctx = s->create_context();
  Tensor x = floats(std::vector<float>(8 * 1024, 0.5f), Shape{8, 1024});
  const int64_t dims[] = {8, 1024};
  TensorArg arg{DType::kFloat32, dims, 2, x.raw_data()};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  ASSERT_GT(ctx->current()->replay()->num_concurrent_groups(), 0);
  const uint64_t heap_before = test::heap_allocations();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  EXPECT_EQ(test::heap_allocations() - heap_before, 0u);
}

}  // namespace
}  // namespace sdx::runtime

namespace sdx::runtime {
namespace {

// The executors report every op they run to the global tracker: bound calls in replay (all
// KERNEL_EXEC) and slot-by-slot steps (with phases in detailed mode).
TEST(ReplayTiming, GlobalTrackerSeesEveryExecutedOp) {
  auto& t = obs::OpTimingTracker::global();
  const obs::TimingMode before = t.mode();
  for (ExecutionMode mode : {ExecutionMode::kAuto, ExecutionMode::kSlotBySlot}) {
    SessionOptions o;
    o.execution_mode = mode;
    o.jit.enabled = false;
    auto s = chain(12, 16, o);
    auto ctx = s->create_context();
    Tensor x = floats(std::vector<float>(16, 0.5f), Shape{1, 16});
    const int64_t dims[] = {1, 16};
    TensorArg arg{DType::kFloat32, dims, 2, x.raw_data()};
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());  // warmup, capture, replay
    t.set_mode(obs::TimingMode::kDetailed);
    t.flush();
    t.reset();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
    t.set_mode(before);
    t.flush();
    uint64_t calls = 0;
    for (const obs::OpStats& st : t.op_stats()) {
      calls += st.calls;
      EXPECT_EQ(st.calls % 5, 0u) << st.op;
      const double exec = st.phase_total_ns[static_cast<int>(obs::TimingPhase::kKernelExec)];
      EXPECT_GT(exec, 0) << st.op;
      if (mode == ExecutionMode::kSlotBySlot)  // the interpreter pays for shapes and buffers each call
        EXPECT_GT(st.phase_total_ns[static_cast<int>(obs::TimingPhase::kMemoryAlloc)], 0) << st.op;
      else
        EXPECT_EQ(st.phase_total_ns[static_cast<int>(obs::TimingPhase::kMemoryAlloc)], 0) << st.op;
    }
    EXPECT_EQ(calls, 5u * 12u) << execution_mode_name(mode);
    EXPECT_EQ(t.overwritten(), 0u);
    t.reset();
  }
}

}  // namespace
}  // namespace sdx::runtime

namespace sdx::runtime {
namespace {

// A decode step's cache update: present = Concat(past [1, 2, 3, 4], Reshape(Relu(x) [8], [1, 2, 1, 4]), axis 2)
// as a graph output; y = Neg(present). With `present_out` false, present is an intermediate only.
std::unique_ptr<Session> kv_step(bool present_out, SessionOptions opts = {}) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("kv");
  ir::Value* past = m.graph->add_input("past", TypeInfo::tensor(DType::kFloat32));
  ir::Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  Tensor shape = Tensor::allocate(DType::kInt64, Shape{4}).value();
  const int64_t dims[] = {1, 2, 1, 4};
  std::copy(dims, dims + 4, shape.data<int64_t>());
  ir::Value* shape_v = m.graph->add_initializer("shape", shape);
  auto node = [&](const char* op, std::vector<ir::Value*> ins, const std::string& out) {
    ir::Node* n = m.graph->add_node(op, "", out + "_node", std::move(ins), {out});
    n->set_opset(17);
    return n;
  };
  ir::Value* r = node("Relu", {x}, "relu")->output(0);
  ir::Value* row = node("Reshape", {r, shape_v}, "row")->output(0);
  ir::Node* cat = node("Concat", {past, row}, "present");
  ir::Attribute axis;
  axis.name = "axis";
  axis.type = ir::AttrType::kInt;
  axis.i = 2;
  cat->set_attribute(axis);
  ir::Value* y = node("Neg", {cat->output(0)}, "y")->output(0);
  m.graph->add_output(y);
  if (present_out) m.graph->add_output(cat->output(0));
  return std::move(Session::create(std::move(m), opts)).value();
}

TEST(Replay, KvCacheInputGoesStraightIntoTheConcatOutputAndViewsAreSkipped) {
  for (bool present_out : {true, false}) {
    auto s = kv_step(present_out);
    SessionOptions slow;
    slow.execution_mode = ExecutionMode::kSlotBySlot;
    auto ref = kv_step(present_out, slow);
    auto ctx = s->create_context();
    const int64_t past_dims[] = {1, 2, 3, 4}, x_dims[] = {8};
    for (int call = 0; call < 8; ++call) {
      std::vector<float> pv(24), xv(8);
      for (size_t i = 0; i < pv.size(); ++i) pv[i] = static_cast<float>((static_cast<int>(i) * 7 + call * 5) % 11) - 5.f;
      for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((static_cast<int>(i) * 3 + call) % 5) - 2.f;
      Tensor past = floats(pv, Shape{1, 2, 3, 4}), x = floats(xv, Shape{8});
      TensorArg args[] = {{DType::kFloat32, past_dims, 4, past.raw_data()}, {DType::kFloat32, x_dims, 1, x.raw_data()}};
      ExecutionReport rep;
      ASSERT_TRUE(s->run(*ctx, args, 2, {}, &rep).is_ok());
      auto want = ref->run({{"past", Datum::tensor(past)}, {"x", Datum::tensor(x)}});
      ASSERT_TRUE(want.is_ok());
      for (size_t o = 0; o < want.value().size(); ++o)
        EXPECT_EQ(values_of(ctx->output(o)), values_of(want.value()[o])) << "call " << call << " output " << o;
      if (call >= 2) EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
    }
    const ReplayHandle& h = *ctx->current()->replay();
    EXPECT_EQ(h.num_elided(), 1) << "the Reshape (constant shape, pinned input) is a view replay skips";
    // Only an output with memory of its own takes the input: an arena buffer may hold other values
    // before the Concat runs.
    EXPECT_EQ(h.num_placed_inputs(), present_out ? 1 : 0);
  }
}

}  // namespace
}  // namespace sdx::runtime
