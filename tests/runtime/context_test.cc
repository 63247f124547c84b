// The first lifecycle phases: a warmup run records shapes, then intermediates run in
// memory frozen per input-shape signature; a new signature warms up on its own.
#include "runtime/context.h"

#include <gtest/gtest.h>

#include "runtime/session.h"

namespace sdx::runtime {
namespace {

using ir::TypeInfo;

// x -> Relu -> Neg -> Relu -> Neg -> y  (three planned intermediates)
std::unique_ptr<Session> chain(SessionOptions opts = {}) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* v = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  const char* ops[] = {"Relu", "Neg", "Relu", "Neg"};
  for (int i = 0; i < 4; ++i) {
    ir::Node* n = m.graph->add_node(ops[i], "", "n" + std::to_string(i), {v}, {"v" + std::to_string(i)});
    n->set_opset(17);
    v = n->output(0);
  }
  m.graph->add_output(v);
  return std::move(Session::create(std::move(m), opts)).value();
}

Tensor ramp(int64_t n, float start) {
  Tensor t = Tensor::allocate(DType::kFloat32, Shape{n}).value();
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = start + static_cast<float>(i) - static_cast<float>(n) / 2;
  return t;
}

uint64_t allocations_of(const Session& s, const Tensor& x, std::vector<float>* out) {
  const uint64_t before = cpu_allocation_count();
  auto r = s.run({{"x", Datum::tensor(x)}});
  const uint64_t used = cpu_allocation_count() - before;
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  const Tensor& y = r.value()[0].as_tensor();
  out->assign(y.data<float>(), y.data<float>() + y.numel());
  return used;
}

TEST(Context, ReplayAllocatesOnlyTheReturnedCopiesAndMatchesWarmup) {
  auto s = chain();
  Tensor x = ramp(1024, 0.5f);
  std::vector<float> warm, captured, replayed;
  allocations_of(*s, x, &warm);                        // WARMUP, then freeze
  allocations_of(*s, x, &captured);                    // capture
  EXPECT_EQ(allocations_of(*s, x, &replayed), 1u);     // replay: only the copy handed to the caller
  EXPECT_EQ(warm, captured);
  EXPECT_EQ(warm, replayed);
  for (size_t i = 0; i < warm.size(); ++i) ASSERT_EQ(warm[i], -std::max(0.f, -std::max(0.f, ramp(1024, 0.5f).data<float>()[i])));
}

TEST(Context, NewShapesWarmUpSeparatelyAndNeverReuseStaleBuffers) {
  auto s = chain();
  std::vector<float> a1, b1, a2, b2;
  allocations_of(*s, ramp(8, 1.f), &a1);   // warmup for [8]
  allocations_of(*s, ramp(16, 2.f), &b1);  // warmup for [16]
  allocations_of(*s, ramp(8, 1.f), &a2);   // frozen [8]
  allocations_of(*s, ramp(16, 2.f), &b2);  // frozen [16]
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(b1, b2);
  EXPECT_EQ(a2.size(), 8u);
  EXPECT_EQ(b2.size(), 16u);
}

TEST(Context, SlotBySlotModeAndWarmupCount) {
  SessionOptions opts;
  opts.execution_mode = ExecutionMode::kSlotBySlot;
  auto s = chain(opts);
  std::vector<float> y;
  Tensor x = ramp(64, 0.f);
  allocations_of(*s, x, &y);
  EXPECT_EQ(allocations_of(*s, x, &y), 4u);  // never frozen: every intermediate allocated each run

  SessionOptions three;
  three.warmup_runs = 3;
  auto w = chain(three);
  auto ctx = w->create_context();
  const int64_t dims[] = {64};
  TensorArg arg{DType::kFloat32, dims, 1, x.raw_data()};
  ExecutionReport rep;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(w->run(*ctx, &arg, 1, {}, &rep).is_ok());
    EXPECT_EQ(rep.mode_used, ExecutionMode::kSlotBySlot);
  }
  EXPECT_EQ(ctx->phase(), PlanPhase::kWarmup);  // three warmup runs; frozen when the signature comes again
  ASSERT_TRUE(w->run(*ctx, &arg, 1, {}, &rep).is_ok());  // freeze and capture
  EXPECT_EQ(ctx->phase(), PlanPhase::kCaptured);
  ASSERT_TRUE(w->run(*ctx, &arg, 1, {}, &rep).is_ok());
  EXPECT_EQ(ctx->phase(), PlanPhase::kReplaying);
  EXPECT_EQ(rep.mode_used, ExecutionMode::kCpuReplay);
  EXPECT_EQ(rep.replay_count, 1);
  EXPECT_EQ(rep.call_count, 5);
}

TEST(Context, OutputsNeverAliasPlannedMemory) {
  auto s = chain();
  Tensor x = ramp(32, 0.f);
  auto first = s->run({{"x", Datum::tensor(x)}});
  auto second = s->run({{"x", Datum::tensor(x)}});
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  Tensor kept = second.value()[0].as_tensor();
  std::vector<float> before(kept.data<float>(), kept.data<float>() + kept.numel());
  auto third = s->run({{"x", Datum::tensor(ramp(32, 100.f))}});  // same signature: reuses planned memory
  ASSERT_TRUE(third.is_ok());
  EXPECT_EQ(std::vector<float>(kept.data<float>(), kept.data<float>() + kept.numel()), before);
}

TEST(Context, PlanCacheCountCapEvictsTheLeastRecentlyUsed) {
  SessionOptions opts;
  opts.plan_cache_max_count = 4;
  auto s = chain(opts);
  std::vector<float> y, first;
  allocations_of(*s, ramp(4, 0.f), &first);
  for (int n = 5; n < 30; ++n) allocations_of(*s, ramp(n, 0.f), &y);  // 25 more shapes
  EXPECT_EQ(s->cache_stats().entries, 4);
  EXPECT_GE(s->cache_stats().evictions, 22);
  // The oldest signature was evicted with its memory, so it warms up again: correct results.
  allocations_of(*s, ramp(4, 0.f), &y);
  EXPECT_EQ(y, first);

  auto ctx = s->create_context();
  std::vector<int64_t> dims(1);
  Tensor x = ramp(64, 0.f);
  for (int n = 1; n <= 6; ++n) {
    dims[0] = n;
    TensorArg arg{DType::kFloat32, dims.data(), 1, x.raw_data()};
    ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  }
  // The entries of this context beyond the cap were marked EVICTED and are freed on its next run.
  int evicted = 0;
  for (const auto& e : ctx->entries()) evicted += e->evicted.load() ? 1 : 0;
  EXPECT_GE(evicted, 1);  // the ones evicted earlier were already freed by the runs since
  EXPECT_EQ(ctx->entries().front()->slot_state(0), SlotState::kEvicted);
  TensorArg arg{DType::kFloat32, dims.data(), 1, x.raw_data()};
  ASSERT_TRUE(s->run(*ctx, &arg, 1).is_ok());
  for (const auto& e : ctx->entries()) EXPECT_FALSE(e->evicted.load());
}

}  // namespace
}  // namespace sdx::runtime
