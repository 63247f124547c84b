#include "ir/onnx_signature.h"

#include <gtest/gtest.h>

#include "ir/graph.h"

namespace sdx::ir {
namespace {

TEST(OnnxSignature, PicksTheNewestVersionAtOrBelowTheOpset) {
  const OnnxSignature* s = find_onnx_signature("Reshape", "", 13);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->since_version, 13);
  EXPECT_STREQ(s->inputs, "rtrt");
  EXPECT_EQ(find_onnx_signature("Reshape", "ai.onnx", 4)->since_version, 1);  // shape was an attribute then
  EXPECT_EQ(find_onnx_signature("Gelu", "", 18), nullptr);
  EXPECT_EQ(first_onnx_version("Gelu", ""), 20);
  EXPECT_TRUE(is_onnx_op("LabelEncoder", "ai.onnx.ml"));
  EXPECT_FALSE(is_onnx_op("Attention", "sdx"));
  EXPECT_GE(onnx_limits().opset, 21);
  EXPECT_GE(onnx_limits().ir_version, 10);
}

TEST(OnnxSignature, ARequiredInputGivenAsEmptyIsInvalidGraph) {
  Graph g("main");
  Value* shape = g.add_input("s", TypeInfo::tensor(DType::kInt64));
  Node* n = g.add_node("Reshape", "", "r1", {nullptr, shape}, {"y"});
  Status st = check_onnx_signature(*n, *find_onnx_signature("Reshape", "", 14));
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidGraph);
  EXPECT_NE(st.message().find("'r1'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("input 0 ('data')"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("required"), std::string::npos) << st.message();
}

TEST(OnnxSignature, OptionalInputsMayBeOmittedAndVariadicOnesMayNot) {
  Graph g("main");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Value* hi = g.add_input("hi", TypeInfo::tensor(DType::kFloat32));
  Node* clip = g.add_node("Clip", "", "c", {x, nullptr, hi}, {"y"});
  EXPECT_TRUE(check_onnx_signature(*clip, *find_onnx_signature("Clip", "", 13)).is_ok());
  Node* concat = g.add_node("Concat", "", "cat", {x, nullptr}, {"z"});
  Attribute axis;
  axis.name = "axis";
  axis.type = AttrType::kInt;
  concat->add_attribute(axis);
  Status st = check_onnx_signature(*concat, *find_onnx_signature("Concat", "", 13));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("variadic"), std::string::npos) << st.message();
}

TEST(OnnxSignature, KindsAndRequiredAttributesAreChecked) {
  Graph g("main");
  TypeInfo seq;
  seq.kind = TypeInfo::Kind::kSequence;
  seq.inner = std::make_shared<TypeInfo>(TypeInfo::tensor(DType::kFloat32));
  Value* s = g.add_input("s", seq);
  Node* relu = g.add_node("Relu", "", "relu", {s}, {"y"});
  Status st = check_onnx_signature(*relu, *find_onnx_signature("Relu", "", 14));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("is a sequence but Relu takes a tensor"), std::string::npos) << st.message();

  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  Node* cast = g.add_node("Cast", "", "cast", {x}, {"z"});
  st = check_onnx_signature(*cast, *find_onnx_signature("Cast", "", 21));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("required attribute 'to'"), std::string::npos) << st.message();

  Node* relu2 = g.add_node("Relu", "", "relu2", {x, x}, {"w"});
  st = check_onnx_signature(*relu2, *find_onnx_signature("Relu", "", 14));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("at most 1"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sdx::ir
