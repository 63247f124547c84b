// hoist_loop_invariants (src/opt/passes/loop_invariant_hoisting_optimizations.cc): Loop body nodes that
// read only outer values, constants and each other move before the Loop, with outputs equal to the
// unoptimized session's; nodes reading the iteration number, the condition or a carried value stay, as do
// random ones; and a Loop that may run 0 times gets only nodes that cannot fail (so a trip count of 0 with an
// invariant Reshape that would fail still runs).
#include "../pass_test_util.h"
#include "control_flow_graph_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"hoist_loop_invariants"};

ir::TypeInfo f32_type(std::vector<int64_t> dims) {
  std::vector<ir::Dim> d;
  for (int64_t x : dims) d.push_back(ir::Dim::fixed(x));
  return ir::TypeInfo::tensor(DType::kFloat32, d);
}

enum class Trip { kConstant, kInput, kAbsent };

struct LoopSpec {
  Trip trip = Trip::kConstant;
  int64_t trip_count = 3;
  bool cond = true;     // the initial condition, a constant
  bool random = false;  // a RandomUniformLike(s) in the body (invariant inputs, never hoisted)
};

// Loop(M, cond, h0 [4]) -> (h [4], scan of wk [M, 4]), body(i, c, h):
//   w2 = Mul(w, s); wk = Mul(w2, Constant 0.5); bw = Add(wk, bk)     invariant (w: outer initializer, s: graph
//                                                                   input, bk: body initializer)
//   rs = ReduceSum(Reshape(s, shp))                                  invariant, but Reshape fails for a bad shp
//   h' = Add(Add(h, Cast(i)), bw) + rs                               reads the iteration number / carried h
//   c' = Identity(c)                                                 reads the condition
//   (random: h' also + 0 * RandomUniformLike(s))
ir::Model loop_model(const LoopSpec& spec) {
  ModelBuilder b;
  ir::Graph& g = b.graph();
  ir::Value* s = b.input("s", {4});
  ir::Value* shp = b.input("shp", {2}, DType::kInt64);
  ir::Value* h0 = b.input("h0", {4});
  ir::Value* w = b.constant("w", f32({1, -2, 3, -4}, {4}));
  ir::Value* m = nullptr;
  if (spec.trip == Trip::kConstant) m = b.constant("m", i64({spec.trip_count}, {}));
  if (spec.trip == Trip::kInput) m = b.input("m", {}, DType::kInt64);
  ir::Value* cond = b.constant("cond", bools({spec.cond}, {}));

  auto body = std::make_shared<ir::Graph>("body", &g);
  ir::Value* i = body->add_input("i", ir::TypeInfo::tensor(DType::kInt64, std::vector<ir::Dim>{}));
  ir::Value* c = body->add_input("c", ir::TypeInfo::tensor(DType::kBool, std::vector<ir::Dim>{}));
  ir::Value* h = body->add_input("h", f32_type({4}));
  ir::Value* bk = body->add_initializer("bk", f32({0.25f, 0.5f, 0.75f, 1.f}, {4}));
  ir::Value* w2 = node(*body, "Mul", "w2", {w, s});
  ir::Value* k = node(*body, "Constant", "k", {}, {attr_t("value", f32({0.5f}, {1}))});
  ir::Value* wk = node(*body, "Mul", "wk", {w2, k});
  ir::Value* bw = node(*body, "Add", "bw", {wk, bk});
  ir::Value* rs = node(*body, "ReduceSum", "rs", {node(*body, "Reshape", "r", {s, shp})}, {attr_i("keepdims", 0)});
  ir::Value* fi = node(*body, "Cast", "fi", {i}, {attr_i("to", 1)});
  ir::Value* hn = node(*body, "Add", "hn", {node(*body, "Add", "hi", {h, fi}), bw});
  hn = node(*body, "Add", "hr", {hn, rs});
  if (spec.random) {
    ir::Value* ru = node(*body, "RandomUniformLike", "ru", {s});
    hn = node(*body, "Add", "hz", {hn, node(*body, "Mul", "rz", {ru, b.constant("zero", f32({0}, {1}))})});
  }
  body->add_output(node(*body, "Identity", "c_out", {c}));
  body->add_output(hn);
  body->add_output(wk);  // a scan output that is a hoisted value
  ir::Node* loop = g.add_node("Loop", "", "loop", {m, cond, h0}, {"h_final", "wk_scan"});
  loop->set_opset(17);
  loop->add_attribute(graph_attr("body", body));
  b.output(loop->output(0));
  b.output(loop->output(1));
  return b.model();
}

std::vector<std::pair<std::string, Datum>> feeds(bool good_shape, int64_t m = -1) {
  std::vector<std::pair<std::string, Datum>> f = {
      {"s", Datum::tensor(random_f32({4}, 11))},
      {"shp", Datum::tensor(good_shape ? i64({2, 2}, {2}) : i64({3, 3}, {2}))},
      {"h0", Datum::tensor(random_f32({4}, 12))}};
  if (m >= 0) f.emplace_back("m", Datum::tensor(i64({m}, {})));
  return f;
}

const ir::Graph& body_of(const ir::Model& m) { return *m.graph->find_value("h_final")->producer()->attr("body")->g; }

std::map<std::string, int> ops(const ir::Graph& g) {
  std::map<std::string, int> h;
  for (const auto& n : g.nodes()) ++h[n->op_type()];
  return h;
}

TEST(LoopInvariantHoistingOptimizations, HoistsEveryInvariantWhenTheLoopSurelyRuns) {
  LoopSpec spec;  // M = 3, cond = true
  PassCheck r = check_pass(
      kPass, [&] { return loop_model(spec); }, feeds(true));
  EXPECT_EQ(r.report.rewrites_of("hoist_loop_invariants"), 5);  // w2, wk, bw, Reshape, ReduceSum

  ir::Model m = loop_model(spec);
  auto rep = opt::optimize(*m.graph, only(kPass));
  ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
  EXPECT_EQ(ops(*m.graph),
            (std::map<std::string, int>{
                {"Mul", 2}, {"Constant", 1}, {"Add", 1}, {"Reshape", 1}, {"ReduceSum", 1}, {"Loop", 1}}));
  // What reads the iteration number, the condition or h stays; the scan output wk is an Identity of the copy.
  const ir::Graph& body = body_of(m);
  EXPECT_EQ(ops(body), (std::map<std::string, int>{{"Cast", 1}, {"Add", 3}, {"Identity", 2}}));
  const ir::Value* wk = body.outputs()[2];
  EXPECT_EQ(wk->name(), "wk");
  ASSERT_NE(wk->producer(), nullptr);
  EXPECT_EQ(wk->producer()->op_type(), "Identity");
  EXPECT_EQ(wk->producer()->input(0)->owner(), m.graph.get());
  EXPECT_EQ(wk->producer()->input(0)->name(), "wk_hoisted");
  // The body initializer the hoisted Add reads was copied out.
  EXPECT_NE(m.graph->find_value("bk_hoisted"), nullptr);
  EXPECT_TRUE(m.graph->find_value("bk_hoisted")->is_initializer());
}

TEST(LoopInvariantHoistingOptimizations, AbsentTripCountWithTrueConditionSurelyRuns) {
  // No M and a constant true condition: the body runs at least once (this model's body never turns the
  // condition false, so it is only optimized, not run).
  LoopSpec spec;
  spec.trip = Trip::kAbsent;
  ir::Model m = loop_model(spec);
  auto rep = opt::optimize(*m.graph, only(kPass));
  ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
  EXPECT_EQ(rep->rewrites_of("hoist_loop_invariants"), 5);
}

TEST(LoopInvariantHoistingOptimizations, RandomNodesStay) {
  LoopSpec spec;
  spec.random = true;
  ir::Model m = loop_model(spec);
  auto rep = opt::optimize(*m.graph, only(kPass));
  ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
  EXPECT_EQ(rep->rewrites_of("hoist_loop_invariants"), 5);
  const auto body_ops = ops(body_of(m));
  EXPECT_EQ(body_ops.at("RandomUniformLike"), 1);
  EXPECT_EQ(body_ops.at("Mul"), 1);  // 0 * random: reads the random value
  EXPECT_EQ(ops(*m.graph).count("RandomUniformLike"), 0u);
}

TEST(LoopInvariantHoistingOptimizations, ZeroTripsHoistOnlyWhatCannotFail) {
  LoopSpec spec;
  spec.trip_count = 0;
  // The Reshape would fail on shp = [3, 3] (9 != 4 elements): the unoptimized Loop never runs it, so neither
  // may the optimized one. Both sessions must run and agree.
  PassCheck r = check_pass(
      kPass, [&] { return loop_model(spec); }, feeds(false));
  EXPECT_EQ(r.report.rewrites_of("hoist_loop_invariants"), 3);  // w2, wk, bw: float elementwise, static shapes
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[1].as_tensor().numel(), 0);  // no iterations, no scan rows
  ir::Model m = loop_model(spec);
  ASSERT_TRUE(opt::optimize(*m.graph, only(kPass)).is_ok());
  EXPECT_EQ(ops(body_of(m)).at("Reshape"), 1);
  EXPECT_EQ(ops(body_of(m)).at("ReduceSum"), 1);

  // The same with a false initial condition.
  spec.trip_count = 3;
  spec.cond = false;
  r = check_pass(
      kPass, [&] { return loop_model(spec); }, feeds(false));
  EXPECT_EQ(r.report.rewrites_of("hoist_loop_invariants"), 3);
}

TEST(LoopInvariantHoistingOptimizations, TripCountKnownOnlyAtRunTime) {
  LoopSpec spec;
  spec.trip = Trip::kInput;
  for (int64_t trips : {0, 2}) {
    SCOPED_TRACE(trips);
    PassCheck r = check_pass(
        kPass, [&] { return loop_model(spec); }, feeds(trips == 2, trips));
    EXPECT_EQ(r.report.rewrites_of("hoist_loop_invariants"), 3);
  }
}

TEST(LoopInvariantHoistingOptimizations, NothingInvariantChangesNothing) {
  // A body reading only its inputs: an RNN step h' = Tanh(h * i).
  auto build = [] {
    ModelBuilder b;
    ir::Graph& g = b.graph();
    ir::Value* h0 = b.input("h0", {4});
    auto body = std::make_shared<ir::Graph>("body", &g);
    ir::Value* i = body->add_input("i", ir::TypeInfo::tensor(DType::kInt64, std::vector<ir::Dim>{}));
    ir::Value* c = body->add_input("c", ir::TypeInfo::tensor(DType::kBool, std::vector<ir::Dim>{}));
    ir::Value* h = body->add_input("h", f32_type({4}));
    body->add_output(node(*body, "Identity", "c_out", {c}));
    body->add_output(
        node(*body, "Tanh", "hn", {node(*body, "Mul", "hm", {h, node(*body, "Cast", "fi", {i}, {attr_i("to", 1)})})}));
    ir::Node* loop = g.add_node("Loop", "", "loop", {b.constant("m", i64({5}, {})), nullptr, h0}, {"h_final"});
    loop->set_opset(17);
    loop->add_attribute(graph_attr("body", body));
    b.output(loop->output(0));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"h0", Datum::tensor(random_f32({4}, 13))}});
  EXPECT_EQ(r.report.rewrites_of("hoist_loop_invariants"), 0);
}

}  // namespace
}  // namespace sdx::test

namespace sdx::test {
namespace {

TEST(LoopInvariantHoistingOptimizations, NestedGraphsReadTheHoistedCopy) {
  // body(i, c, h): w2 = Mul(w, s); b = If(h[0] > 0, then={out w2 itself}, else={out Neg(w2)}); h' = h + b.
  // The If stays (it has subgraphs); its then-branch's output and the else-branch's read follow w2 out.
  auto build = [] {
    ModelBuilder b;
    ir::Graph& g = b.graph();
    ir::Value* s = b.input("s", {4});
    ir::Value* h0 = b.input("h0", {4});
    ir::Value* w = b.constant("w", f32({1, -2, 3, -4}, {4}));
    auto body = std::make_shared<ir::Graph>("body", &g);
    ir::Value* i = body->add_input("i", ir::TypeInfo::tensor(DType::kInt64, std::vector<ir::Dim>{}));
    ir::Value* c = body->add_input("c", ir::TypeInfo::tensor(DType::kBool, std::vector<ir::Dim>{}));
    ir::Value* h = body->add_input("h", f32_type({4}));
    (void)i;
    ir::Value* w2 = node(*body, "Mul", "w2", {w, s});
    ir::Value* pos = node(
        *body, "Greater", "pos",
        {node(*body, "ReduceSum", "hs", {h}, {attr_i("keepdims", 0)}), body->add_initializer("zero", f32({0}, {}))});
    auto then_g = std::make_shared<ir::Graph>("then", body.get());
    then_g->add_output(w2);
    auto else_g = std::make_shared<ir::Graph>("else", body.get());
    else_g->add_output(node(*else_g, "Neg", "nw", {w2}));
    ir::Node* iff = body->add_node("If", "", "if", {pos}, {"bsel"});
    iff->set_opset(17);
    iff->add_attribute(graph_attr("then_branch", then_g));
    iff->add_attribute(graph_attr("else_branch", else_g));
    body->add_output(node(*body, "Identity", "c_out", {c}));
    body->add_output(node(*body, "Add", "hn", {h, iff->output(0)}));
    ir::Node* loop = g.add_node("Loop", "", "loop", {b.constant("m", i64({4}, {})), nullptr, h0}, {"h_final"});
    loop->set_opset(17);
    loop->add_attribute(graph_attr("body", body));
    b.output(loop->output(0));
    return b.model();
  };
  PassCheck r =
      check_pass(kPass, build, {{"s", Datum::tensor(random_f32({4}, 14))}, {"h0", Datum::tensor(random_f32({4}, 15))}});
  EXPECT_EQ(r.report.rewrites_of("hoist_loop_invariants"), 1);
  ir::Model m = build();
  ASSERT_TRUE(opt::optimize(*m.graph, only(kPass)).is_ok());
  const ir::Node* iff = nullptr;
  for (const auto& n : body_of(m).nodes())
    if (n->op_type() == "If") iff = n.get();
  ASSERT_NE(iff, nullptr);
  const ir::Value* copy = m.graph->find_value("w2_hoisted");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(iff->attr("then_branch")->g->outputs()[0], copy);
  EXPECT_EQ(iff->attr("else_branch")->g->nodes()[0]->input(0), copy);
}

}  // namespace
}  // namespace sdx::test
