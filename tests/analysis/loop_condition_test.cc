#include "analysis/loop_condition.h"

#include <gtest/gtest.h>

#include "ir/graph.h"

namespace sdx::analysis {
namespace {

Tensor float_scalar(float v) {
  Tensor t = Tensor::allocate(DType::kFloat32, Shape{}).value();
  *t.data<float>() = v;
  return t;
}

// body(i, cond, x, y) with x' = x * 1.1 and y' = y; the caller adds the condition output first.
struct Body {
  ir::Graph g{"body"};
  ir::Value* i = g.add_input("i", ir::TypeInfo::tensor(DType::kInt64));
  ir::Value* cond = g.add_input("cond_in", ir::TypeInfo::tensor(DType::kBool));
  ir::Value* x = g.add_input("x", ir::TypeInfo::tensor(DType::kFloat32));
  ir::Value* y = g.add_input("y", ir::TypeInfo::tensor(DType::kFloat32));
  ir::Value* k = g.add_initializer("k", float_scalar(1.1f));
  ir::Value* zero = g.add_initializer("zero", float_scalar(0));
  ir::Value* x_new = g.add_node("Mul", "", "mul", {x, k}, {"x_out"})->output(0);
  ir::Value* y_new = g.add_node("Identity", "", "idy", {y}, {"y_out"})->output(0);
  void finish(ir::Value* c) {
    g.add_output(c);
    g.add_output(x_new);
    g.add_output(y_new);
  }
};

TEST(LoopCondition, ComparisonOfTheNewValueWithAConstant) {
  Body b;
  b.finish(b.g.add_node("Greater", "", "gt", {b.x_new, b.zero}, {"c"})->output(0));
  LoopCondition c = analyze_loop_condition(b.g);
  ASSERT_TRUE(c.form) << c.note;
  EXPECT_EQ(c.form->describe(), "x > 0");
  EXPECT_EQ(c.carried, 0);
  EXPECT_TRUE(c.reads_new_value);
  EXPECT_EQ(c.field, StatField::kMean);
  EXPECT_EQ(c.depends_on, std::vector<int>{0});
  EXPECT_FALSE(c.always_true);
  EXPECT_EQ(c.describe({"x", "y"}), "x > 0");
}

TEST(LoopCondition, ConstantOnTheLeftSwapsTheComparisonAndNotNegatesIt) {
  Body b;
  ir::Value* lt = b.g.add_node("Less", "", "lt", {b.zero, b.y}, {"lt"})->output(0);  // 0 < y  <=>  y > 0
  b.finish(b.g.add_node("Not", "", "not", {lt}, {"c"})->output(0));                  // not: y <= 0
  LoopCondition c = analyze_loop_condition(b.g);
  ASSERT_TRUE(c.form) << c.note;
  EXPECT_EQ(c.form->describe(), "y <= 0");
  EXPECT_EQ(c.carried, 1);
  EXPECT_FALSE(c.reads_new_value);  // the incoming y, not y_out
  EXPECT_EQ(c.depends_on, std::vector<int>{1});
}

TEST(LoopCondition, NotEqualAndAReductionOfATensor) {
  Body b;
  ir::Value* m = b.g.add_node("ReduceMax", "", "rmax", {b.x_new}, {"m"})->output(0);
  ir::Value* eq = b.g.add_node("Equal", "", "eq", {m, b.zero}, {"eq"})->output(0);
  b.finish(b.g.add_node("Not", "", "not", {eq}, {"c"})->output(0));
  LoopCondition c = analyze_loop_condition(b.g);
  ASSERT_TRUE(c.form) << c.note;
  EXPECT_EQ(c.form->op, Comparison::kNotEqual);
  EXPECT_EQ(c.field, StatField::kMax);
  EXPECT_EQ(c.describe({"x", "y"}), "x != 0 (the max of x)");
}

TEST(LoopCondition, ADerivedQuantityGivesTheDependenciesOnly) {
  Body b;  // |x' - y| > 0: two carried values, no single-variable form
  ir::Value* d = b.g.add_node("Sub", "", "sub", {b.x_new, b.y}, {"d"})->output(0);
  ir::Value* a = b.g.add_node("Abs", "", "abs", {d}, {"a"})->output(0);
  b.finish(b.g.add_node("Greater", "", "gt", {a, b.zero}, {"c"})->output(0));
  LoopCondition c = analyze_loop_condition(b.g);
  EXPECT_FALSE(c.form);
  EXPECT_EQ(c.depends_on, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.describe({"x", "y"}), "depends on x, y (not a comparison of one carried scalar with a constant)");
}

TEST(LoopCondition, PassedThroughOrConstantTrueIsAlwaysTrue) {
  Body b;
  b.finish(b.g.add_node("Identity", "", "id", {b.cond}, {"c"})->output(0));
  LoopCondition c = analyze_loop_condition(b.g);
  EXPECT_TRUE(c.always_true);
  EXPECT_FALSE(c.form);
  EXPECT_TRUE(c.depends_on.empty());

  Body t;
  Tensor one = Tensor::allocate(DType::kBool, Shape{}).value();
  *one.data<uint8_t>() = 1;
  t.finish(t.g.add_initializer("true", one));
  EXPECT_TRUE(analyze_loop_condition(t.g).always_true);
  EXPECT_EQ(analyze_loop_condition(t.g).describe({"x", "y"}), "the condition output is the constant true");
}

}  // namespace
}  // namespace sdx::analysis
