// Memory layout without a session: which slots get planned memory, where each frozen tensor sits, and
// that no two tensors alive at the same step share bytes.
#include "plan/memory_layout.h"

#include <gtest/gtest.h>

#include <map>

namespace sdx::plan {
namespace {

using ir::TypeInfo;

struct Chain {
  ir::Graph g{"main"};
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  std::vector<ir::Node*> nodes;
  // x -> Relu -> Neg -> Relu -> ... (n steps) -> y
  explicit Chain(int n) {
    ir::Value* v = x;
    for (int i = 0; i < n; ++i) {
      ir::Node* node = g.add_node(i % 2 ? "Neg" : "Relu", "", "n" + std::to_string(i), {v},
                                  {i + 1 == n ? "y" : "v" + std::to_string(i)});
      node->set_opset(17);
      nodes.push_back(node);
      v = node->output(0);
    }
    g.add_output(v);
  }
};

// Every slot seen with float32[rows, 16], stable.
std::vector<RecordedSlot> record_all(const Plan& p, int64_t rows) {
  std::vector<RecordedSlot> rec(p.slots().size());
  for (RecordedSlot& r : rec) {
    r.seen = true;
    r.dtype = DType::kFloat32;
    r.shape = Shape{rows, 16};
  }
  return rec;
}

TEST(MemoryLayout, IntermediatesShareMemoryOutputsAndInputsGetTheirOwn) {
  Chain c(6);
  const Plan p = compile(c.g, c.g.outputs()).value();
  const std::vector<RecordedSlot> rec = record_all(p, 4);
  const std::vector<const ir::Value*> outs = {c.g.outputs()[0]};
  const MemoryLayout l = layout_memory(p, rec, outs, {{c.x, DType::kFloat32, Shape{4, 16}}}).value();
  ASSERT_EQ(l.block_bytes.size(), l.block_dtype.size());
  std::map<int, const Placement*> by_value;
  for (const Placement& pl : l.placements) {
    EXPECT_TRUE(by_value.emplace(pl.value, &pl).second) << "value " << pl.value << " placed twice";
    ASSERT_GE(pl.block, 0);
    ASSERT_LT(pl.block, static_cast<int>(l.block_bytes.size()));
    EXPECT_LE(pl.offset + 4 * 16 * 4, l.block_bytes[static_cast<size_t>(pl.block)]);
  }
  // 5 intermediates (the 6th node's output is the requested output), the output and the input.
  EXPECT_EQ(l.placements.size(), 7u);
  EXPECT_EQ(l.memory.num_requests, 5);
  // A chain needs two live intermediates at a time: planned far below one buffer each.
  EXPECT_LT(l.memory.coloring_bytes < l.memory.arena_bytes ? l.memory.coloring_bytes : l.memory.arena_bytes,
            l.memory.naive_bytes);
  // The output and the input each own a block nobody else is placed in.
  for (const ir::Value* v : {c.g.outputs()[0], c.x}) {
    const Placement* own = by_value.at(v->index());
    for (const Placement& pl : l.placements) {
      if (&pl != own) EXPECT_NE(pl.block, own->block) << v->name();
    }
  }
  // Intermediates alive at the same step never overlap in memory.
  for (const Placement& a : l.placements)
    for (const Placement& b : l.placements) {
      if (&a == &b || a.block != b.block) continue;
      const Slot& sa = p.slots()[static_cast<size_t>(p.slot_of(c.g.values()[static_cast<size_t>(a.value)].get()))];
      const Slot& sb = p.slots()[static_cast<size_t>(p.slot_of(c.g.values()[static_cast<size_t>(b.value)].get()))];
      const bool live_together = sa.first <= sb.last && sb.first <= sa.last;
      const bool overlap = a.offset < b.offset + 256 && b.offset < a.offset + 256;
      EXPECT_FALSE(live_together && overlap) << a.value << " and " << b.value;
    }
  EXPECT_EQ(l.total_bytes(), [&] {
    int64_t n = 0;
    for (int64_t b : l.block_bytes) n += b;
    return n;
  }());
}

TEST(MemoryLayout, UnstableUnseenSharedAndStringSlotsStayOut) {
  Chain c(4);
  const Plan p = compile(c.g, c.g.outputs()).value();
  std::vector<RecordedSlot> rec = record_all(p, 2);
  const int s0 = p.slot_of(c.nodes[0]->output(0)), s1 = p.slot_of(c.nodes[1]->output(0)),
            s2 = p.slot_of(c.nodes[2]->output(0)), sy = p.slot_of(c.g.outputs()[0]);
  rec[static_cast<size_t>(s0)].stable = false;  // shape changed between warmup runs
  rec[static_cast<size_t>(s1)].shared = true;   // held by a sequence too
  rec[static_cast<size_t>(s2)].seen = false;    // never produced
  rec[static_cast<size_t>(sy)].stable = false;  // the output's shape depends on the call
  const MemoryLayout l =
      layout_memory(p, rec, {c.g.outputs()[0]}, {{c.x, DType::kString, Shape{2, 16}}}).value();
  EXPECT_EQ(l.memory.num_requests, 0);
  ASSERT_EQ(l.placements.size(), 1u);  // only the string input, with no block of its own
  EXPECT_EQ(l.placements[0].value, c.x->index());
  EXPECT_EQ(l.placements[0].block, -1);
  EXPECT_EQ(l.total_bytes(), 0);
}

TEST(MemoryLayout, SlotsAfterADataDependentStepAreTainted) {
  ir::Graph g("main");
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  ir::Node* nz = g.add_node("NonZero", "", "nz", {x}, {"idx"});
  nz->set_opset(17);
  ir::Node* neg = g.add_node("Neg", "", "neg", {nz->output(0)}, {"y"});
  neg->set_opset(17);
  ir::Node* relu = g.add_node("Relu", "", "relu", {x}, {"r"});
  relu->set_opset(17);
  g.add_output(neg->output(0));
  g.add_output(relu->output(0));
  const Plan p = compile(g, g.outputs()).value();
  const std::vector<bool> t = tainted_slots(p);
  EXPECT_TRUE(t[static_cast<size_t>(p.slot_of(nz->output(0)))]);
  EXPECT_TRUE(t[static_cast<size_t>(p.slot_of(neg->output(0)))]);
  EXPECT_FALSE(t[static_cast<size_t>(p.slot_of(relu->output(0)))]);
}

TEST(MemoryLayout, ARecordOfAnotherPlanIsAnError) {
  Chain c(3);
  const Plan p = compile(c.g, c.g.outputs()).value();
  auto r = layout_memory(p, std::vector<RecordedSlot>(1), {}, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("warmup record"), std::string::npos);
}

}  // namespace
}  // namespace sdx::plan
