// lift_subgraph: a body copied out of its graph reads its outer scope through inputs (captured values)
// and initializers (outer constants), nested graphs included; the source graph is left as it was.
#include "ir/lift_subgraph.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"

namespace sdx::ir {
namespace {

TypeInfo f32(std::vector<int64_t> dims) {
  std::vector<Dim> d;
  for (int64_t x : dims) d.push_back(Dim::fixed(x));
  return TypeInfo::tensor(DType::kFloat32, std::move(d));
}

Tensor floats(std::vector<float> v) {
  return Tensor::from_values(DType::kFloat32, Shape({static_cast<int64_t>(v.size())}), v.data());
}

Attribute graph_attr(const std::string& name, std::shared_ptr<Graph> g) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kGraph;
  a.g = std::move(g);
  return a;
}

// main: x (input), w (constant), p (input with an initializer: overridable), c (cond)
//   If(c) then: t = Add(x, w); inner If(c) then: u = Mul(t, p) (reads the body's t and main's p) ...
struct Fixture {
  std::shared_ptr<Graph> main = std::make_shared<Graph>("main");
  Value* x = main->add_input("x", f32({3}));
  Value* w = main->add_initializer("w", floats({1, 2, 3}));
  Value* p = main->add_input("p", f32({3}));
  Value* c = main->add_input("c", TypeInfo::tensor(DType::kBool, std::vector<Dim>{}));
  std::shared_ptr<Graph> body = std::make_shared<Graph>("then", main.get());
  std::shared_ptr<Graph> inner = std::make_shared<Graph>("inner", body.get());
  Node* iff = nullptr;

  Fixture() {
    main->add_initializer("p", floats({4, 5, 6}));
    Node* add = body->add_node("Add", "", "add", {x, w}, {"t"});
    // The inner If reads t (the body's) and p (main's); its output is named like a main value.
    Node* mul = inner->add_node("Mul", "", "mul", {add->output(0), p}, {"x_inner"});
    inner->add_output(mul->output(0));
    Node* in_if = body->add_node("If", "", "inner_if", {c}, {"u"});
    in_if->add_attribute(graph_attr("then_branch", inner));
    in_if->add_attribute(graph_attr("else_branch", inner));
    body->add_output(in_if->output(0));
    body->add_output(add->output(0));
    body->add_output(x);  // an outer value as an output: gets an Identity
    iff = main->add_node("If", "", "if0", {c}, {"a", "b", "d"});
    iff->add_attribute(graph_attr("then_branch", body));
    iff->add_attribute(graph_attr("else_branch", body));
    for (int i = 0; i < 3; ++i) main->add_output(iff->output(i));
  }
};

TEST(LiftSubgraph, OuterReadsBecomeInputsAndConstantsInitializers) {
  Fixture f;
  auto lifted = lift_subgraph(*f.body);
  ASSERT_TRUE(lifted.is_ok()) << lifted.status().to_string();
  const LiftedBody& l = lifted.value();
  // First-read order: x (Add), then p and c (the inner graph, the inner If's condition).
  ASSERT_EQ(l.captured.size(), 3u);
  EXPECT_EQ(l.captured[0], f.x);
  EXPECT_EQ(l.captured[2], f.p);  // an initializer that is also an input stays an input
  EXPECT_EQ(l.captured[1], f.c);
  ASSERT_EQ(l.constants.size(), 1u);
  EXPECT_EQ(l.constants[0], f.w);
  EXPECT_TRUE(l.assumed_tensors.empty());

  const Graph& g = *l.graph;
  EXPECT_EQ(g.parent(), nullptr);
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.inputs()[0]->name(), "x");
  EXPECT_EQ(g.inputs()[0]->type().to_string(), f.x->type().to_string());
  Value* w = g.find_value("w");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->is_initializer());
  EXPECT_EQ(w->initializer().raw_data(), f.w->initializer().raw_data());  // shares the bytes

  // Every value a node of the lifted graph (or of its nested graph) reads is owned there.
  auto owned = [&](const Value* v) {
    for (const Graph* o = v->owner(); o; o = o->parent())
      if (o == &g) return true;
    return false;
  };
  const Node* add = nullptr;
  const Node* in_if = nullptr;
  for (const auto& n : g.nodes()) {
    for (const Value* v : n->inputs()) EXPECT_TRUE(!v || owned(v)) << n->describe();
    if (n->op_type() == "Add") add = n.get();
    if (n->op_type() == "If") in_if = n.get();
  }
  ASSERT_TRUE(add && in_if);
  EXPECT_EQ(add->input(0), g.inputs()[0]);
  EXPECT_EQ(add->input(1), w);
  const Graph* inner = in_if->attr("then_branch")->g.get();
  ASSERT_NE(inner, f.inner.get());
  EXPECT_EQ(inner->parent(), &g);
  const Node& mul = *inner->nodes()[0];
  EXPECT_EQ(mul.input(0), add->output(0));
  EXPECT_EQ(mul.input(1), g.inputs()[2]);
  EXPECT_TRUE(owned(mul.input(1)));

  // Outputs: u, t, and x through an Identity of its own.
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.outputs()[1], add->output(0));
  ASSERT_NE(g.outputs()[2]->producer(), nullptr);
  EXPECT_EQ(g.outputs()[2]->producer()->op_type(), "Identity");
  EXPECT_EQ(g.outputs()[2]->producer()->input(0), g.inputs()[0]);
  EXPECT_TRUE(verify(g).is_ok()) << verify(g).to_string();

  // The source is untouched: its nodes still read main's values, which have no new users.
  EXPECT_EQ(f.body->nodes()[0]->input(0), f.x);
  EXPECT_EQ(f.inner->nodes()[0]->input(1), f.p);
  EXPECT_EQ(f.x->users().size(), 1u);
}

TEST(LiftSubgraph, CapturedNamesNeverCollideWithTheBodys) {
  Fixture f;
  // A body value named like the outer input it also reads.
  Node* n = f.body->add_node("Neg", "", "neg", {f.x}, {"x"});
  f.body->add_output(n->output(0));
  auto lifted = lift_subgraph(*f.body);
  ASSERT_TRUE(lifted.is_ok()) << lifted.status().to_string();
  const Graph& g = *lifted.value().graph;
  EXPECT_NE(g.inputs()[0]->name(), "x");
  EXPECT_EQ(g.find_value("x")->producer()->op_type(), "Neg");
}

TEST(LiftSubgraph, UntypedInputsAreAssumedTensors) {
  auto main = std::make_shared<Graph>("main");
  Value* x = main->add_value("x");  // produced elsewhere, never typed
  auto body = std::make_shared<Graph>("body", main.get());
  Value* i = body->add_input("i", TypeInfo{});
  Node* add = body->add_node("Add", "", "add", {i, x}, {"y"});
  body->add_output(add->output(0));
  auto lifted = lift_subgraph(*body);
  ASSERT_TRUE(lifted.is_ok()) << lifted.status().to_string();
  EXPECT_EQ(lifted.value().assumed_tensors, (std::vector<int>{0, 1}));
  EXPECT_EQ(lifted.value().graph->inputs()[1]->type().kind, TypeInfo::Kind::kTensor);
}

TEST(LiftSubgraph, AReadOfAnUndefinedValueIsAnError) {
  auto main = std::make_shared<Graph>("main");
  auto body = std::make_shared<Graph>("body", main.get());
  Value* later = body->add_value("later", TypeInfo::tensor(DType::kFloat32));
  Node* n = body->add_node("Relu", "", "relu", {later}, {"y"});
  body->add_output(n->output(0));
  auto lifted = lift_subgraph(*body);
  ASSERT_FALSE(lifted.is_ok());
  EXPECT_NE(lifted.status().message().find("'later'"), std::string::npos) << lifted.status().message();
}

}  // namespace
}  // namespace sdx::ir
