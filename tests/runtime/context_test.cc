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

TEST(Context, FrozenRunsAllocateOnlyOutputsAndMatchWarmup) {
  auto s = chain();
  Tensor x = ramp(1024, 0.5f);
  std::vector<float> warm, frozen, again;
  const uint64_t warm_allocs = allocations_of(*s, x, &warm);
  const uint64_t frozen_allocs = allocations_of(*s, x, &frozen);
  const uint64_t again_allocs = allocations_of(*s, x, &again);
  // Four node outputs, plus the planned memory allocated at freeze: v0, v1, v2 live over [0,1],
  // [1,2], [2,3], so coloring needs two buffers (v2 reuses v0's).
  EXPECT_EQ(warm_allocs, 4u + 2u);
  EXPECT_EQ(frozen_allocs, 1u);     // only the requested output (handed to the caller)
  EXPECT_EQ(again_allocs, 1u);
  EXPECT_EQ(warm, frozen);
  EXPECT_EQ(warm, again);
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
  EXPECT_EQ(allocations_of(*w, x, &y), 4u);
  EXPECT_EQ(allocations_of(*w, x, &y), 4u);
  EXPECT_EQ(allocations_of(*w, x, &y), 6u);  // third warmup run, then freeze (two planned buffers)
  EXPECT_EQ(allocations_of(*w, x, &y), 1u);
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

TEST(Context, KeepsABoundedNumberOfSignatures) {
  auto s = chain();
  std::vector<float> y, first;
  allocations_of(*s, ramp(4, 0.f), &first);
  for (int n = 5; n < 30; ++n) allocations_of(*s, ramp(n, 0.f), &y);  // 25 more shapes
  // The oldest signature was dropped with its memory, so it warms up again: correct results.
  allocations_of(*s, ramp(4, 0.f), &y);
  EXPECT_EQ(y, first);

  Context ctx;
  const plan::Plan& p = s->plan();
  for (int n = 0; n < 20; ++n) ctx.entry_for({{DType::kFloat32, Shape{n}}}, p);
  EXPECT_EQ(ctx.entries().size(), Context::kMaxSignatures);
  EXPECT_EQ(ctx.entries().back()->signature[0].second, (Shape{19}));
  ctx.entry_for({{DType::kFloat32, Shape{12}}}, p);  // a hit moves to most recent
  EXPECT_EQ(ctx.entries().back()->signature[0].second, (Shape{12}));
  EXPECT_EQ(ctx.entries().size(), Context::kMaxSignatures);
}

}  // namespace
}  // namespace sdx::runtime
