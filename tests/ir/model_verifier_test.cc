#include "ir/model_verifier.h"

#include <gtest/gtest.h>

namespace sdx::ir {
namespace {

Model relu_model(int opset) {
  Model m;
  m.graph = std::make_shared<Graph>("main");
  m.opsets[""] = opset;
  Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* n = m.graph->add_node("Relu", "", "r", {x}, {"y"});
  n->set_opset(opset);
  m.graph->add_output(n->output(0));
  return m;
}

TEST(ModelVerifier, AcceptsAPlainModel) { EXPECT_TRUE(verify_model(relu_model(17)).is_ok()); }

TEST(ModelVerifier, RejectsOpsetsOutsideTheSpec) {
  for (int opset : {0, -3, 9999}) {
    Status st = verify_model(relu_model(opset));
    ASSERT_FALSE(st.is_ok()) << opset;
    EXPECT_EQ(st.code(), StatusCode::kInvalidGraph);
    EXPECT_NE(st.message().find("opset_import"), std::string::npos) << st.message();
  }
}

TEST(ModelVerifier, RejectsAGraphWithoutOutputs) {
  Model empty;
  empty.graph = std::make_shared<Graph>("main");
  empty.opsets[""] = 17;
  empty.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  Status st = verify_model(empty);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("has no outputs"), std::string::npos) << st.message();
}

TEST(ModelVerifier, RejectsAnOpOlderThanItsOpset) {
  Model m;
  m.graph = std::make_shared<Graph>("main");
  m.opsets[""] = 18;
  Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* n = m.graph->add_node("Gelu", "", "gelu", {x}, {"y"});
  n->set_opset(18);
  m.graph->add_output(n->output(0));
  Status st = verify_model(m);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("Gelu is not part of ai.onnx opset 18; it was added in opset 20"), std::string::npos)
      << st.message();
}

// The minimal case of the mutation campaign: Reshape("", s1) -> Reshape(., s2) used to crash a pass.
TEST(ModelVerifier, RejectsAnEmptyRequiredInputInsideASubgraphToo) {
  Model m = relu_model(17);
  auto body = std::make_shared<Graph>("then", m.graph.get());
  Value* s = body->add_initializer("s", Tensor::from_values(DType::kInt64, Shape({1}), std::vector<int64_t>{4}.data()));
  Node* r1 = body->add_node("Reshape", "", "r1", {nullptr, s}, {"a"});
  r1->set_opset(17);
  Node* r2 = body->add_node("Reshape", "", "r2", {r1->output(0), s}, {"b"});
  r2->set_opset(17);
  body->add_output(r2->output(0));
  Value* c = m.graph->add_input("c", TypeInfo::tensor(DType::kBool));
  Node* iff = m.graph->add_node("If", "", "if0", {c}, {"z"});
  iff->set_opset(17);
  Attribute then_branch;
  then_branch.name = "then_branch";
  then_branch.type = AttrType::kGraph;
  then_branch.g = body;
  iff->add_attribute(then_branch);
  Attribute else_branch = then_branch;
  else_branch.name = "else_branch";
  iff->add_attribute(else_branch);
  m.graph->add_output(iff->output(0));
  Status st = verify_model(m);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidGraph);
  EXPECT_NE(st.message().find("'if0'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'r1' (Reshape): input 0 ('data') is required"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sdx::ir
