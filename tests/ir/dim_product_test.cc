// ir/dim_product.h: dims as products of symbols, and the Reshape / Flatten shapes that use them.
#include "ir/dim_product.h"

#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "ir/type_inference.h"

namespace sdx::ir {
namespace {

DimProduct P(int64_t coef, std::multiset<std::string> symbols) { return DimProduct{coef, std::move(symbols)}; }

TEST(DimProduct, ParsesTopLevelProductsOnly) {
  EXPECT_EQ(parse_product(Dim::fixed(6)), P(6, {}));
  EXPECT_EQ(parse_product(Dim::symbolic("s6")), P(1, {"s6"}));
  EXPECT_EQ(parse_product(Dim::symbolic("6*s6")), P(6, {"s6"}));
  EXPECT_EQ(parse_product(Dim::symbolic("(a + 1)*(b)*2*3")), P(6, {"a + 1", "b"}));
  EXPECT_EQ(parse_product(Dim::symbolic("((x))")), P(1, {"x"}));
  // A sum, a quotient, or a product inside a call are one symbol: '*' is split only when it is the only
  // operator at the top level ("2*a/3" is (2*a)/3, not 2*(a/3)).
  EXPECT_EQ(parse_product(Dim::symbolic("a*b + c")), P(1, {"a*b + c"}));
  EXPECT_EQ(parse_product(Dim::symbolic("2*a/3")), P(1, {"2*a/3"}));
  EXPECT_EQ(parse_product(Dim::symbolic("floor(a*2)")), P(1, {"floor(a*2)"}));
  EXPECT_EQ(parse_product(Dim{}), std::nullopt);
}

TEST(DimProduct, MultipliesDividesAndSpells) {
  auto m = multiply(P(6, {"s6"}), P(400, {}));
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, P(2400, {"s6"}));
  EXPECT_EQ(divide(*m, P(400, {})), P(6, {"s6"}));
  EXPECT_EQ(divide(*m, P(6, {"s6"})), P(400, {}));
  EXPECT_EQ(divide(*m, P(7, {})), std::nullopt);          // not a divisor
  EXPECT_EQ(divide(*m, P(1, {"other"})), std::nullopt);   // a symbol it does not hold
  EXPECT_EQ(multiply(P(INT64_MAX, {}), P(2, {})), std::nullopt);
  EXPECT_EQ(spell(P(6, {"s6"})).param, "6*s6");
  EXPECT_EQ(spell(P(1, {"s6"})).param, "s6");
  EXPECT_EQ(spell(P(3, {})).value, 3);
  EXPECT_EQ(spell(P(1, {"a + 1", "b"})).param, "(a + 1)*b");
  EXPECT_EQ(parse_product(spell(P(2, {"a + 1", "b"}))), P(2, {"a + 1", "b"}));  // spelled products read back
}

// Reshape's -1 and Flatten's dims are products when symbols are folded together (attention's heads into the
// batch), so the dims meet again when they are unfolded.
TEST(DimProduct, ReshapeAndFlattenFoldSymbolsIntoProducts) {
  Graph g("g");
  Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, Dims{Dim::symbolic("b"), Dim::fixed(6), Dim::fixed(10), Dim::fixed(8)}));
  std::vector<int64_t> fold_to{-1, 10, 8}, unfold_to{-1, 6, 10, 8};
  Value* s3 = g.add_initializer("s3", Tensor::from_values(DType::kInt64, Shape{3}, fold_to.data()));
  Value* s4 = g.add_initializer("s4", Tensor::from_values(DType::kInt64, Shape{4}, unfold_to.data()));
  Node* fold = g.add_node("Reshape", "", "fold", {x, s3}, {"f"});
  Node* unfold = g.add_node("Reshape", "", "unfold", {fold->output(0), s4}, {"u"});
  Node* flat = g.add_node("Flatten", "", "flat", {x}, {"fl"});
  Attribute axis;
  axis.name = "axis";
  axis.type = AttrType::kInt;
  axis.i = 2;
  flat->add_attribute(axis);
  g.add_output(unfold->output(0));
  g.add_output(flat->output(0));
  ASSERT_TRUE(infer_types(g).is_ok());
  EXPECT_EQ(fold->output(0)->type().shape_string(), "[6*b, 10, 8]");
  EXPECT_EQ(unfold->output(0)->type().shape_string(), "[b, 6, 10, 8]");
  EXPECT_EQ(flat->output(0)->type().shape_string(), "[6*b, 80]");
}

}  // namespace
}  // namespace sdx::ir
