#include "plan/plan.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sdx::plan {
namespace {

using ir::TypeInfo;

struct Fixture {
  ir::Graph g{"main"};
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  ir::Node* add(const std::string& op, const std::string& name, std::vector<ir::Value*> in, std::vector<std::string> out) {
    ir::Node* n = g.add_node(op, "", name, in, out);
    n->set_opset(17);
    return n;
  }
};

TEST(PlanCompile, WiringLivenessAndRelease) {
  // a = Relu(x); b = Neg(a); c = Add(a, b); y = Relu(c)
  Fixture f;
  ir::Node* a = f.add("Relu", "a", {f.x}, {"a"});
  ir::Node* b = f.add("Neg", "b", {a->output(0)}, {"b"});
  ir::Node* c = f.add("Add", "c", {a->output(0), b->output(0)}, {"c"});
  ir::Node* y = f.add("Relu", "y", {c->output(0)}, {"y"});
  f.g.add_output(y->output(0));
  auto r = compile(f.g, f.g.outputs());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Plan& p = *r;
  ASSERT_EQ(p.steps().size(), 4u);
  ASSERT_EQ(p.placeholder_slots().size(), 1u);
  const int sx = p.placeholder_slots()[0], sa = p.slot_of(a->output(0)), sb = p.slot_of(b->output(0)),
            sc = p.slot_of(c->output(0)), sy = p.slot_of(y->output(0));
  EXPECT_EQ(p.steps()[2].inputs, (std::vector<int>{sa, sb}));
  EXPECT_EQ(p.steps()[2].outputs, (std::vector<int>{sc}));
  EXPECT_EQ(p.slots()[static_cast<size_t>(sa)].first, 0);
  EXPECT_EQ(p.slots()[static_cast<size_t>(sa)].last, 2);  // read by b (1) and c (2)
  EXPECT_EQ(p.slots()[static_cast<size_t>(sx)].kind, SlotKind::kInput);
  EXPECT_TRUE(p.slots()[static_cast<size_t>(sy)].requested_output);
  EXPECT_EQ(p.release_at_step()[2], (std::vector<int>{sa, sb}));
  EXPECT_EQ(p.release_at_step()[3], (std::vector<int>{sc}));
  EXPECT_EQ(p.output_slots(), (std::vector<int>{sy}));
}

TEST(PlanCompile, WavesGroupIndependentStepsAndWidenLiveness) {
  // Graph order: a = Relu(x); a2 = Neg(a); b = Abs(x); c = Add(a2, b); y = Relu(c)
  // Waves: {a, b}, {a2}, {c}, {y}: b moves up next to a.
  Fixture f;
  ir::Node* a = f.add("Relu", "a", {f.x}, {"a"});
  ir::Node* a2 = f.add("Neg", "a2", {a->output(0)}, {"a2"});
  ir::Node* b = f.add("Abs", "b", {f.x}, {"b"});
  ir::Node* c = f.add("Add", "c", {a2->output(0), b->output(0)}, {"c"});
  ir::Node* y = f.add("Relu", "y", {c->output(0)}, {"y"});
  f.g.add_output(y->output(0));
  auto seq = compile(f.g, f.g.outputs());
  ASSERT_TRUE(seq.is_ok());
  EXPECT_TRUE(seq->wave_begin().empty());
  EXPECT_EQ(seq->steps()[1].node, a2);
  auto r = compile(f.g, f.g.outputs(), CompileOptions{.waves = true});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Plan& p = *r;
  ASSERT_EQ(p.steps().size(), 5u);
  EXPECT_EQ(p.steps()[0].node, a);
  EXPECT_EQ(p.steps()[1].node, b);
  EXPECT_EQ(p.steps()[2].node, a2);
  EXPECT_EQ(p.steps()[3].node, c);
  EXPECT_EQ(p.wave_begin(), (std::vector<int>{0, 2, 3, 4, 5}));
  // a lives over its whole wave {a, b} through its reader a2's wave; b from its wave to c's.
  const Slot& sa = p.slots()[static_cast<size_t>(p.slot_of(a->output(0)))];
  const Slot& sb = p.slots()[static_cast<size_t>(p.slot_of(b->output(0)))];
  EXPECT_EQ(sa.first, 0);
  EXPECT_EQ(sa.last, 2);
  EXPECT_EQ(sb.first, 0);  // widened from step 1 to the start of its wave
  EXPECT_EQ(sb.last, 3);
  std::vector<int> released = p.release_at_step()[3];
  std::sort(released.begin(), released.end());
  std::vector<int> want = {p.slot_of(a2->output(0)), p.slot_of(b->output(0))};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(released, want);
}

TEST(PlanCompile, FiltersDeadNodes) {
  Fixture f;
  ir::Node* used = f.add("Relu", "used", {f.x}, {"u"});
  ir::Node* dead = f.add("Neg", "dead", {f.x}, {"d"});
  f.add("Abs", "dead2", {dead->output(0)}, {"d2"});
  f.g.add_output(used->output(0));
  auto r = compile(f.g, f.g.outputs());
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->steps().size(), 1u);
  EXPECT_EQ(r->num_dead_nodes(), 2);
  EXPECT_EQ(r->slot_of(dead->output(0)), -1);
  // Requesting only the other branch keeps it and drops the first.
  auto r2 = compile(f.g, {dead->output(0)});
  ASSERT_TRUE(r2.is_ok());
  EXPECT_EQ(r2->steps().size(), 1u);
  EXPECT_EQ(r2->steps()[0].node->name(), "dead");
}

TEST(PlanCompile, MarksGapsAndExtendsLivenessThroughSubgraphs) {
  Fixture f;
  ir::Node* a = f.add("Relu", "a", {f.x}, {"a"});
  ir::Node* nz = f.add("NonZero", "nz", {a->output(0)}, {"idx"});
  // An If whose then-branch reads `a` from the enclosing scope.
  ir::Value* cond = f.g.add_input("cond", TypeInfo::tensor(DType::kBool));
  ir::Node* iff = f.add("If", "if", {cond}, {"r"});
  auto then_g = std::make_shared<ir::Graph>("then", &f.g);
  ir::Node* inner = then_g->add_node("Neg", "", "inner", {a->output(0)}, {"t"});
  then_g->add_output(inner->output(0));
  auto else_g = std::make_shared<ir::Graph>("else", &f.g);
  else_g->add_output(a->output(0));
  ir::Attribute tb, eb;
  tb.name = "then_branch";
  tb.type = ir::AttrType::kGraph;
  tb.g = then_g;
  eb.name = "else_branch";
  eb.type = ir::AttrType::kGraph;
  eb.g = else_g;
  iff->add_attribute(tb);
  iff->add_attribute(eb);
  f.g.add_output(nz->output(0));
  f.g.add_output(iff->output(0));
  auto r = compile(f.g, f.g.outputs());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->steps().size(), 3u);
  EXPECT_FALSE(r->steps()[0].gap);
  EXPECT_TRUE(r->steps()[1].gap);  // NonZero: output shape depends on data
  EXPECT_TRUE(r->steps()[2].gap);  // If
  EXPECT_EQ(r->slots()[static_cast<size_t>(r->slot_of(a->output(0)))].last, 2);  // read inside the If
  EXPECT_EQ(r->placeholder_slots().size(), 2u);
}

}  // namespace
}  // namespace sdx::plan
