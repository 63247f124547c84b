#include "ir/graph.h"

#include <gtest/gtest.h>

#include "ir/op_schema.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace sdx::ir {
namespace {

TEST(Graph, BuildsAndResolvesOuterScope) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* n = g.add_node("Relu", "", "r", {x}, {"y"});
  g.add_output(n->output(0));
  EXPECT_EQ(n->output(0)->producer(), n);
  EXPECT_EQ(g.find_value("y"), n->output(0));
  Graph body("body", &g);
  EXPECT_EQ(body.resolve("x"), x);
  EXPECT_EQ(body.find_value("x"), nullptr);
  EXPECT_TRUE(verify(g).is_ok());
}

TEST(Graph, TopologicalSortKeepsAValidOrder) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* a = g.add_node("Relu", "", "a", {x}, {"a_out"});
  Node* b = g.add_node("Relu", "", "b", {a->output(0)}, {"b_out"});
  g.add_output(b->output(0));
  ASSERT_TRUE(g.sort_topologically().is_ok());
  EXPECT_EQ(g.nodes()[0]->name(), "a");
  EXPECT_EQ(g.nodes()[1]->name(), "b");
}

TEST(Verifier, RejectsUseBeforeDefinition) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Value* dangling = g.add_value("ghost");
  Node* n = g.add_node("Add", "", "add0", {x, dangling}, {"y"});
  g.add_output(n->output(0));
  Status s = verify(g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'ghost'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("add0"), std::string::npos) << s.message();
}

TEST(Verifier, ChecksSchemaArity) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* n = g.add_node("If", "", "if0", {x, x, x}, {"y"});
  g.add_output(n->output(0));
  Status s = verify(g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("if0"), std::string::npos) << s.message();
}

TEST(OpSchema, RegistryHasCategoriesAndGaps) {
  const OpSchema* loop = OpSchemaRegistry::get().find("Loop", "ai.onnx");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->op_category(), OpCategory::kControlFlow);
  EXPECT_FALSE(loop->capturable());
  EXPECT_STREQ(op_category_name(OpCategory::kElementwise), "ELEMENTWISE");
}

TEST(Verifier, ChecksAttributeNamesAndTypes) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* n = g.add_node("Softmax", "", "sm", {x}, {"y"});
  g.add_output(n->output(0));
  Attribute axis;
  axis.name = "axis";
  axis.type = AttrType::kFloat;  // must be an int
  axis.f = 1.f;
  n->add_attribute(axis);
  Status s = verify(g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'sm' (Softmax): attribute 'axis' must be of type int but is float"), std::string::npos)
      << s.message();

  Graph g2("main");
  Value* x2 = g2.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* r = g2.add_node("Relu", "", "relu", {x2}, {"y"});
  g2.add_output(r->output(0));
  Attribute bogus;
  bogus.name = "alpha";
  bogus.type = AttrType::kFloat;
  r->add_attribute(bogus);
  s = verify(g2);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("has attribute 'alpha', which Relu does not define"), std::string::npos) << s.message();
}

TEST(OpSchema, EveryOpDeclaresItsAttributes) {
  for (const OpSchema* s : OpSchemaRegistry::get().all())
    EXPECT_TRUE(s->attributes_declared()) << s->domain() << "::" << s->name()
                                          << " has no .attrs({...}); see tools/onnx_attrs.py";
}

TEST(Printer, OneLinePerNode) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::symbolic("N")}));
  Node* n = g.add_node("Relu", "", "r", {x}, {"y"});
  g.add_output(n->output(0));
  std::string text = print_graph(g);
  EXPECT_NE(text.find("graph main (x: tensor(float)[N]) -> (y)"), std::string::npos) << text;
  EXPECT_NE(text.find("y = Relu(x)"), std::string::npos) << text;
}

}  // namespace
}  // namespace sdx::ir
