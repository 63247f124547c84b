// inline_constant_ifs (src/opt/passes/if_inlining_optimizations.cc): an If on a constant condition becomes
// its taken branch, in both directions, with outputs equal to the unoptimized session's, names unique over
// the whole model, outer-scope reads kept and nested subgraphs moved intact; an If on anything else stays.
#include <unordered_set>

#include "../pass_test_util.h"
#include "control_flow_graph_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"inline_constant_ifs"};

ir::Node* add_if(ir::Graph& g, ir::Value* cond, std::shared_ptr<ir::Graph> then_g, std::shared_ptr<ir::Graph> else_g,
                 const std::vector<std::string>& outs, const std::string& name = "if0") {
  ir::Node* n = g.add_node("If", "", name, {cond}, outs);
  n->set_opset(17);
  n->add_attribute(graph_attr("then_branch", std::move(then_g)));
  n->add_attribute(graph_attr("else_branch", std::move(else_g)));
  return n;
}

// Every value name of g and its nested graphs; fails the test on a repeat.
void expect_unique_names(const ir::Graph& g, std::unordered_set<std::string>& seen) {
  for (const auto& v : g.values()) {
    if (v->producer() == nullptr && !v->is_graph_input() && !v->is_initializer()) continue;  // dead leftovers
    EXPECT_TRUE(seen.insert(v->name()).second) << "value name '" << v->name() << "' defined twice";
  }
  for (const auto& n : g.nodes())
    for (const ir::Graph* sg : n->subgraphs()) expect_unique_names(*sg, seen);
}

// y = Relu(If(c, then={t = Add(x, w); u = Mul(t, x) -> u}, else={t_else = Sub(x, w) -> t_else})), and a second
// output t = Neg(x) of the main graph, so the then-branch's "t" must be renamed when inlined.
// The condition: an initializer `c` (constant) unless `cond_input` (a graph input).
ir::Model if_model(bool cond, bool cond_input = false) {
  ModelBuilder b;
  ir::Graph& g = b.graph();
  ir::Value* x = b.input("x", {4});
  ir::Value* w = b.constant("w", f32({1, -2, 3, -4}, {4}));
  ir::Value* c = cond_input ? b.input("c", {}, DType::kBool) : b.constant("c", bools({cond}, {}));
  auto then_g = std::make_shared<ir::Graph>("then", &g);
  ir::Value* t = node(*then_g, "Add", "t", {x, w});
  then_g->add_output(node(*then_g, "Mul", "u", {t, x}));
  auto else_g = std::make_shared<ir::Graph>("else", &g);
  else_g->add_output(node(*else_g, "Sub", "t_else", {x, w}));
  ir::Node* iff = add_if(g, c, then_g, else_g, {"b"});
  b.output(node(g, "Relu", "y", {iff->output(0)}));
  b.output(node(g, "Neg", "t", {x}));  // the then-branch's "t" must not reuse this name
  return b.model();
}

TEST(IfInliningOptimizations, ConstantTrueAndFalseInlineTheTakenBranch) {
  for (bool cond : {true, false}) {
    SCOPED_TRACE(cond ? "true" : "false");
    PassCheck r = check_pass(kPass, [&] { return if_model(cond); }, {{"x", Datum::tensor(random_f32({4}, 1))}});
    EXPECT_EQ(r.report.rewrites_of("inline_constant_ifs"), 1);
    EXPECT_EQ(r.ops_after.count("If"), 0u);
    EXPECT_EQ(r.ops_after.count(cond ? "Add" : "Sub"), 1u);
    EXPECT_EQ(r.ops_after.count(cond ? "Sub" : "Add"), 0u);
    EXPECT_EQ(r.ops_after.count("Mul"), cond ? 1u : 0u);

    ir::Model m = if_model(cond);
    auto rep = opt::optimize(*m.graph, only(kPass));
    ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
    std::unordered_set<std::string> seen;
    expect_unique_names(*m.graph, seen);
    // The If's output keeps its name: the branch's last node produces "b" itself.
    ir::Value* b = m.graph->find_value("b");
    ASSERT_NE(b, nullptr);
    ASSERT_NE(b->producer(), nullptr);
    EXPECT_EQ(b->producer()->op_type(), cond ? "Mul" : "Sub");
    EXPECT_EQ(b->producer()->name(), cond ? "if0/u" : "if0/t_else");
    if (cond) {  // the then-branch's "t" collides with the main graph's "t": renamed
      ir::Node* mul = b->producer();
      EXPECT_EQ(mul->input(0)->name(), "t_1");
      EXPECT_EQ(mul->input(1), m.graph->find_value("x"));  // the outer-scope read is the outer value itself
    }
  }
}

TEST(IfInliningOptimizations, NonConstantConditionsStay) {
  // A graph input.
  for (bool c : {true, false}) {
    const uint8_t cv = c;
    PassCheck r =
        check_pass(kPass, [] { return if_model(false, true); },
                   {{"x", Datum::tensor(random_f32({4}, 2))},
                    {"c", Datum::tensor(Tensor::from_values(DType::kBool, Shape(std::vector<int64_t>{}), &cv))}});
    EXPECT_EQ(r.report.rewrites_of("inline_constant_ifs"), 0);
    EXPECT_EQ(r.ops_after.at("If"), 1);
  }
  // An initializer that is also a graph input: callers may override it, so it is not a constant.
  auto overridable = [] {
    ModelBuilder b;
    ir::Graph& g = b.graph();
    ir::Value* x = b.input("x", {4});
    ir::Value* c = b.input("c", {}, DType::kBool);
    g.add_initializer("c", bools({true}, {}));  // the input's default
    auto then_g = std::make_shared<ir::Graph>("then", &g);
    then_g->add_output(node(*then_g, "Neg", "tn", {x}));
    auto else_g = std::make_shared<ir::Graph>("else", &g);
    else_g->add_output(node(*else_g, "Abs", "ea", {x}));
    b.output(add_if(g, c, then_g, else_g, {"b"})->output(0));
    return b.model();
  };
  ir::Model m = overridable();
  auto rep = opt::optimize(*m.graph, only(kPass));
  ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
  EXPECT_EQ(rep->rewrites_of("inline_constant_ifs"), 0);
  EXPECT_EQ(rep->ops_after.at("If"), 1);
}

TEST(IfInliningOptimizations, ConditionFromAConstantNodeOrFolding) {
  // A Constant node: this pass alone reads its value.
  auto from_constant_node = [] {
    ModelBuilder b;
    ir::Graph& g = b.graph();
    ir::Value* x = b.input("x", {3});
    ir::Value* c = b.op("Constant", {}, {attr_t("value", bools({false}, {}))});
    auto then_g = std::make_shared<ir::Graph>("then", &g);
    then_g->add_output(node(*then_g, "Neg", "tn", {x}));
    auto else_g = std::make_shared<ir::Graph>("else", &g);
    else_g->add_output(node(*else_g, "Exp", "ee", {x}));
    b.output(add_if(g, c, then_g, else_g, {"y"})->output(0));  // the If's output is the graph output
    return b.model();
  };
  PassCheck r = check_pass(kPass, from_constant_node, {{"x", Datum::tensor(random_f32({3}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("inline_constant_ifs"), 1);
  EXPECT_EQ(r.ops_after.count("If"), 0u);
  EXPECT_EQ(r.ops_after.at("Exp"), 1);

  // Equal(3, 3): constant only once fold_constants has run, in the same round.
  auto folded = [] {
    ModelBuilder b;
    ir::Graph& g = b.graph();
    ir::Value* x = b.input("x", {3});
    ir::Value* c =
        b.op("Equal", {b.op("Constant", {}, {attr_t("value", i64({3}, {}))}), b.constant("k", i64({3}, {}))});
    auto then_g = std::make_shared<ir::Graph>("then", &g);
    then_g->add_output(node(*then_g, "Neg", "tn", {x}));
    auto else_g = std::make_shared<ir::Graph>("else", &g);
    else_g->add_output(node(*else_g, "Exp", "ee", {x}));
    b.output(add_if(g, c, then_g, else_g, {"y"})->output(0));
    return b.model();
  };
  r = check_pass({"inline_constant_ifs", "fold_constants"}, folded, {{"x", Datum::tensor(random_f32({3}, 4))}});
  EXPECT_EQ(r.report.rewrites_of("inline_constant_ifs"), 1);
  EXPECT_EQ(r.report.iterations, 2);  // the second round changed nothing
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Neg", 1}}));
}

// The taken branch holds an If of its own, reading a value of the branch (t) and one of the main graph (x);
// its condition is c2, a graph input (kept) or a Constant node of the branch (inlined in the same sweep).
ir::Model nested_model(bool inner_constant) {
  ModelBuilder b;
  ir::Graph& g = b.graph();
  ir::Value* x = b.input("x", {4});
  ir::Value* c2 = inner_constant ? nullptr : b.input("c2", {}, DType::kBool);
  auto then_g = std::make_shared<ir::Graph>("then", &g);
  ir::Value* t = node(*then_g, "Sigmoid", "t", {x});
  if (inner_constant) c2 = node(*then_g, "Constant", "c2k", {}, {attr_t("value", bools({true}, {}))});
  auto inner_then = std::make_shared<ir::Graph>("inner_then", then_g.get());
  inner_then->add_output(node(*inner_then, "Add", "it", {t, x}));
  auto inner_else = std::make_shared<ir::Graph>("inner_else", then_g.get());
  inner_else->add_output(node(*inner_else, "Mul", "ie", {t, x}));
  ir::Node* inner = add_if(*then_g, c2, inner_then, inner_else, {"inner_out"}, "inner_if");
  then_g->add_output(inner->output(0));
  auto else_g = std::make_shared<ir::Graph>("else", &g);
  else_g->add_output(x);  // an outer value as the branch's output
  ir::Node* outer = add_if(g, b.constant("c", bools({true}, {})), then_g, else_g, {"b"}, "outer_if");
  b.output(node(g, "Tanh", "y", {outer->output(0)}));
  return b.model();
}

TEST(IfInliningOptimizations, NestedIfInTheTakenBranchMovesIntact) {
  for (bool c2 : {true, false}) {
    const uint8_t cv = c2;
    PassCheck r =
        check_pass(kPass, [] { return nested_model(false); },
                   {{"x", Datum::tensor(random_f32({4}, 5))},
                    {"c2", Datum::tensor(Tensor::from_values(DType::kBool, Shape(std::vector<int64_t>{}), &cv))}});
    EXPECT_EQ(r.report.rewrites_of("inline_constant_ifs"), 1);
    EXPECT_EQ(r.ops_after.at("If"), 1);  // the inner one
  }
  ir::Model m = nested_model(false);
  auto rep = opt::optimize(*m.graph, only(kPass));
  ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
  // The branch output inner_out was the outer If's output b: the inner If produces b itself now.
  ASSERT_NE(m.graph->find_value("b"), nullptr);
  const ir::Node* inner = m.graph->find_value("b")->producer();
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->op_type(), "If");
  EXPECT_EQ(inner->owner(), m.graph.get());
  for (const ir::Graph* sg : inner->subgraphs()) {
    EXPECT_EQ(sg->parent(), m.graph.get());
    // Its read of the branch's "t" reads the copy in the main graph, which lists it as a user.
    const ir::Node* n = sg->nodes()[0].get();
    EXPECT_EQ(n->input(0), m.graph->find_value("t"));
    EXPECT_EQ(n->input(0)->owner(), m.graph.get());
    const auto& users = n->input(0)->users();
    EXPECT_NE(std::find(users.begin(), users.end(), n), users.end());
    const auto& xusers = m.graph->find_value("x")->users();
    EXPECT_EQ(std::count(xusers.begin(), xusers.end(), n), 1);
  }
}

TEST(IfInliningOptimizations, NestedIfOnABranchConstantIsInlinedToo) {
  PassCheck r = check_pass(kPass, [] { return nested_model(true); }, {{"x", Datum::tensor(random_f32({4}, 6))}});
  EXPECT_EQ(r.report.rewrites_of("inline_constant_ifs"), 2);
  EXPECT_EQ(r.ops_after.count("If"), 0u);
  EXPECT_EQ(r.ops_after.at("Add"), 1);
  EXPECT_EQ(r.ops_after.count("Mul"), 0u);
}

TEST(IfInliningOptimizations, OuterValueAsTheBranchOutputGoesThroughAnIdentity) {
  auto build = [] {
    ir::Model m = nested_model(false);
    // Flip the outer condition: the else branch outputs x itself.
    m.graph->find_value("c")->set_initializer(bools({false}, {}));
    return m;
  };
  PassCheck r =
      check_pass(kPass, build, {{"x", Datum::tensor(random_f32({4}, 7))}, {"c2", Datum::tensor(bools({true}, {}))}});
  EXPECT_EQ(r.report.rewrites_of("inline_constant_ifs"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Identity", 1}, {"Tanh", 1}}));
}

}  // namespace
}  // namespace sdx::test
