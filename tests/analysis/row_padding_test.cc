// analysis/row_padding.h: which symbolic input dims are independent rows (padding them is exact), and, for
// the others, the node that mixes them.
#include "analysis/row_padding.h"

#include <gtest/gtest.h>

#include "ir/shape_inference.h"
#include "ir/type_inference.h"

namespace sdx::analysis {
namespace {

using ir::Dim;
using ir::Dims;
using ir::Graph;
using ir::Node;
using ir::TypeInfo;
using ir::Value;

Dim N(const char* s) { return Dim::symbolic(s); }
Dim F(int64_t v) { return Dim::fixed(v); }

Value* ints(Graph& g, const std::string& name, std::vector<int64_t> v) {
  return g.add_initializer(name, Tensor::from_values(DType::kInt64, Shape{static_cast<int64_t>(v.size())}, v.data()));
}
Value* weights(Graph& g, const std::string& name, int64_t k, int64_t n) {
  std::vector<float> w(static_cast<size_t>(k * n), 0.5f);
  return g.add_initializer(name, Tensor::from_values(DType::kFloat32, Shape{k, n}, w.data()));
}
ir::Attribute int_attr(const char* name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}
ir::Attribute ints_attr(const char* name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInts;
  a.ints = std::move(v);
  return a;
}

// x [batch, seq, 16] -> MatMul -> Softmax over `softmax_axis` -> y.
std::map<std::string, std::string> prove_softmax(int64_t softmax_axis) {
  Graph g("g");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), N("seq"), F(16)}));
  Node* mm = g.add_node("MatMul", "", "mm", {x, weights(g, "w", 16, 8)}, {"h"});
  Node* sm = g.add_node("Softmax", "", "sm", {mm->output(0)}, {"y"});
  sm->add_attribute(int_attr("axis", softmax_axis));
  g.add_output(sm->output(0));
  EXPECT_TRUE(ir::infer_types(g).is_ok());
  return prove_row_dims(g);
}

TEST(RowPadding, RowsKeptApartAreProvenAndAMixedAxisNamesItsNode) {
  auto p = prove_softmax(-1);
  EXPECT_EQ(p["batch"], "");
  EXPECT_EQ(p["seq"], "");
  p = prove_softmax(1);  // normalizes along seq
  EXPECT_EQ(p["batch"], "");
  EXPECT_NE(p["seq"].find("node 'sm' (Softmax) mixes positions along it (input 0 axis 1)"), std::string::npos)
      << p["seq"];
}

TEST(RowPadding, ReductionsContractionsAndConcatenationsAlongTheDimAreRefused) {
  Graph g("g");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), F(16)}));
  Value* u = g.add_input("u", TypeInfo::tensor(DType::kFloat32, Dims{N("c"), F(16)}));
  Node* red = g.add_node("ReduceMax", "", "red", {x}, {"m"});
  red->add_attribute(ints_attr("axes", {0}));
  Node* sub = g.add_node("Sub", "", "sub", {x, red->output(0)}, {"y"});
  Value* tk = g.add_input("tk", TypeInfo::tensor(DType::kFloat32, Dims{F(2), N("k")}));
  Node* mk = g.add_node("MatMul", "", "mk", {tk, g.add_input("kb", TypeInfo::tensor(DType::kFloat32, Dims{N("k"), F(3)}))},
                        {"z"});
  Node* cat = g.add_node("Concat", "", "cat", {u, u}, {"cc"});
  cat->add_attribute(int_attr("axis", 0));
  g.add_output(sub->output(0));
  g.add_output(mk->output(0));
  g.add_output(cat->output(0));
  ASSERT_TRUE(ir::infer_types(g).is_ok());
  auto p = prove_row_dims(g);
  EXPECT_NE(p["batch"].find("node 'red' (ReduceMax) mixes"), std::string::npos) << p["batch"];
  EXPECT_NE(p["k"].find("node 'mk' (MatMul) mixes"), std::string::npos) << p["k"];
  EXPECT_NE(p["c"].find("node 'cat' (Concat) mixes"), std::string::npos) << p["c"];
}

// Sizes of the dim may shape tensors (a Reshape's target computed from Shape) but not enter arithmetic.
TEST(RowPadding, SizesShapeTensorsButAreNotData) {
  Graph g("g");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), F(2), F(8)}));
  Node* shape = g.add_node("Shape", "", "shape", {x}, {"shape"});
  Node* b = g.add_node("Gather", "", "b", {shape->output(0), ints(g, "i0", {0})}, {"b"});
  Node* target = g.add_node("Concat", "", "target", {b->output(0), ints(g, "rest", {16})}, {"target"});
  target->add_attribute(int_attr("axis", 0));
  Node* flat = g.add_node("Reshape", "", "flat", {x, target->output(0)}, {"flat"});  // [batch, 16]
  g.add_output(flat->output(0));
  ASSERT_TRUE(ir::infer_types(g).is_ok());
  EXPECT_EQ(prove_row_dims(g)["batch"], "");

  // The same size cast to float and divided into the rows: a mean over the batch size.
  Node* cast = g.add_node("Cast", "", "cast", {b->output(0)}, {"bf"});
  cast->add_attribute(int_attr("to", 1));
  Node* div = g.add_node("Div", "", "div", {flat->output(0), cast->output(0)}, {"scaled"});
  g.add_output(div->output(0));
  ASSERT_TRUE(ir::infer_types(g).is_ok());
  const std::string why = prove_row_dims(g)["batch"];
  EXPECT_NE(why.find("node 'div' (Div) reads a size of it as data"), std::string::npos) << why;
}

TEST(RowPadding, AReshapeThatRegroupsTheDimOrAnOpWithoutARuleIsRefused) {
  Graph g("g");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), F(4)}));
  Node* r = g.add_node("Reshape", "", "r", {x, ints(g, "s", {4, -1})}, {"r"});  // [4, batch]: rows scrambled
  g.add_output(r->output(0));
  Value* y = g.add_input("y", TypeInfo::tensor(DType::kFloat32, Dims{N("n"), F(4)}));
  Node* nz = g.add_node("NonZero", "", "nz", {y}, {"nz"});
  g.add_output(nz->output(0));
  ASSERT_TRUE(ir::infer_types(g).is_ok());
  auto p = prove_row_dims(g);
  EXPECT_NE(p["batch"].find("node 'r' (Reshape)"), std::string::npos) << p["batch"];
  EXPECT_NE(p["n"].find("node 'nz' (NonZero) has no row rule"), std::string::npos) << p["n"];
}

// x [batch, 6, 10, 8] -> Reshape [-1, 10, 8] (the heads folded into the batch, "6*batch") -> MatMul -> Softmax
// -> Reshape [-1, 6, 10, 8] -> y, as exporters write attention; `then` sees the folded value.
std::map<std::string, std::string> prove_folded_heads(bool batch_minor, bool fold_out) {
  Graph g("g");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), F(6), F(10), F(8)}));
  Value* h = x;
  if (batch_minor) {  // [6, batch, 10, 8]: folding puts the heads outside the batch
    Node* t = g.add_node("Transpose", "", "t", {x}, {"t"});
    t->add_attribute(ints_attr("perm", {1, 0, 2, 3}));
    h = t->output(0);
  }
  Node* fold = g.add_node("Reshape", "", "fold", {h, ints(g, "s3", {-1, 10, 8})}, {"f"});
  Node* mm = g.add_node("MatMul", "", "mm", {fold->output(0), weights(g, "w", 8, 8)}, {"m"});
  Node* sm = g.add_node("Softmax", "", "sm", {mm->output(0)}, {"p"});
  sm->add_attribute(int_attr("axis", -1));
  if (fold_out) {
    g.add_output(sm->output(0));
  } else {
    Node* unfold = g.add_node("Reshape", "", "unfold", {sm->output(0), ints(g, "s4", {-1, 6, 10, 8})}, {"y"});
    g.add_output(unfold->output(0));
  }
  EXPECT_TRUE(ir::infer_types(g).is_ok());
  EXPECT_EQ(fold->output(0)->type().shape_string(), "[6*batch, 10, 8]");
  return prove_row_dims(g);
}

TEST(RowPadding, HeadsFoldedIntoTheBatchKeepItsRowsWhenTheBatchIsTheOuterFactor) {
  EXPECT_EQ(prove_folded_heads(false, false)["batch"], "");
  // [6, batch, 10, 8] -> [6*batch, 10, 8]: a padded batch would interleave with the heads.
  const std::string minor = prove_folded_heads(true, false)["batch"];
  EXPECT_NE(minor.find("node 'fold' (Reshape) regroups it with other dims"), std::string::npos) << minor;
  // Outputs are sliced back along the batch itself, not a product of it.
  const std::string out = prove_folded_heads(false, true)["batch"];
  EXPECT_NE(out.find("output 'p' has it inside a product ([6*batch, 10, 8])"), std::string::npos) << out;
}

TEST(RowPadding, RowsGroupedDifferentlyDoNotMeet) {
  // x [batch, 2, 4] -> Reshape [-1, 4] ("2*batch") -> Add u [batch, 4]; with_z adds an input z [2*batch, 4].
  auto prove = [](bool with_z) {
    Graph g("g");
    Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), F(2), F(4)}));
    Node* fold = g.add_node("Reshape", "", "fold", {x, ints(g, "s2", {-1, 4})}, {"f"});
    Value* u = g.add_input("u", TypeInfo::tensor(DType::kFloat32, Dims{N("batch"), F(4)}));
    g.add_output(g.add_node("Add", "", "add", {fold->output(0), u}, {"y"})->output(0));
    if (with_z) {
      Value* z = g.add_input("z", TypeInfo::tensor(DType::kFloat32, Dims{N("2*batch"), F(4)}));
      g.add_output(g.add_node("Relu", "", "rz", {z}, {"rz"})->output(0));
    }
    (void)ir::infer_types(g);  // the broadcast of 2*batch with batch may be refused by inference: the prover decides alone
    return prove_row_dims(g)["batch"];
  };
  const std::string why = prove(true);
  EXPECT_NE(why.find("input 'z' has it inside a product"), std::string::npos) << why;
  // Without z: Add meets [2*batch, 4] and [batch, 4].
  const std::string why2 = prove(false);
  EXPECT_NE(why2.find("node 'add' (Add) meets it grouped differently (2*batch and batch)"), std::string::npos) << why2;
}

TEST(RowPadding, TheDimInsideASumOrTwiceInOneShapeIsRefused) {
  Graph g("g");
  Value* m = g.add_input("mask", TypeInfo::tensor(DType::kFloat32, Dims{N("b"), N("past + b")}));
  Value* sq = g.add_input("square", TypeInfo::tensor(DType::kFloat32, Dims{N("n"), N("n")}));
  Node* a = g.add_node("Relu", "", "a", {m}, {"a"});
  Node* c = g.add_node("Relu", "", "c", {sq}, {"c"});
  g.add_output(a->output(0));
  g.add_output(c->output(0));
  ASSERT_TRUE(ir::infer_types(g).is_ok());
  auto p = prove_row_dims(g);
  EXPECT_NE(p["b"].find("inside a sum"), std::string::npos) << p["b"];
  EXPECT_NE(p["n"].find("at two axes"), std::string::npos) << p["n"];
  EXPECT_EQ(p.count("past + b"), 0u);  // a sum is not a dim to pad on its own
}

}  // namespace
}  // namespace sdx::analysis
