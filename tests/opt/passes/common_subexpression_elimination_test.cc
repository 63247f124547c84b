#include "../pass_test_util.h"
#include "ir/type_inference.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"CommonSubexpressionElimination"};

TEST(CommonSubexpressionElimination, MergesDuplicatedChainsInOneSweep) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* y = b.input("y", {2, 3});
    ir::Value* a1 = b.op("Add", {b.op("Relu", {x}), y});
    ir::Value* a2 = b.op("Add", {b.op("Relu", {x}), y});
    ir::Value* s1 = b.op("Softmax", {a1}, {attr_i("axis", 1)});
    ir::Value* s2 = b.op("Softmax", {a2}, {attr_i("axis", 1)});
    ir::Value* s3 = b.op("Softmax", {a2}, {attr_i("axis", 0)});  // other attribute: stays
    ir::Value* d1 = b.op("Sub", {s1, y});
    ir::Value* d2 = b.op("Sub", {y, s2});  // operands swapped: stays
    b.output(b.op("Mul", {b.op("Add", {d1, d2}), s3}));
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 1))}, {"y", Datum::tensor(random_f32({2, 3}, 2))}});
  EXPECT_EQ(r.report.rewrites_of("CommonSubexpressionElimination"), 3);  // Relu, Add, Softmax(axis=1)
  EXPECT_EQ(r.ops_after.at("Relu"), 1);
  EXPECT_EQ(r.ops_after.at("Softmax"), 2);
  EXPECT_EQ(r.ops_after.at("Sub"), 2);
}

TEST(CommonSubexpressionElimination, GraphOutputsKeepTheirNames) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {4});
    ir::Value* inner = b.op("Exp", {x});
    ir::Value* out = b.op("Exp", {x});  // a graph output: the earlier Exp goes instead
    b.output(b.op("Neg", {inner}));
    b.output(out);
    ir::Value* o1 = b.op("Abs", {x});
    ir::Value* o2 = b.op("Abs", {x});  // both graph outputs: both stay
    b.output(o1);
    b.output(o2);
    return b.model();
  };
  PassCheck r = check_pass(kPasses, build, {{"x", Datum::tensor(random_f32({4}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("CommonSubexpressionElimination"), 1);
  EXPECT_EQ(r.ops_after.at("Exp"), 1);
  EXPECT_EQ(r.ops_after.at("Abs"), 2);
}

TEST(CommonSubexpressionElimination, NeverMergesRandomOps) {
  ModelBuilder b;
  ir::Value* x = b.input("x", {4});
  ir::Value* r1 = b.op("RandomUniformLike", {x}, {attr_f("seed", 1.f)});
  ir::Value* r2 = b.op("RandomUniformLike", {x}, {attr_f("seed", 1.f)});
  b.output(b.op("Add", {r1, r2}));
  ir::Model m = b.model();
  ASSERT_TRUE(ir::infer_types(*m.graph).is_ok());
  auto rep = opt::optimize(*m.graph, only(kPasses));
  ASSERT_TRUE(rep.is_ok()) << rep.status().to_string();
  EXPECT_EQ(rep->rewrites_of("CommonSubexpressionElimination"), 0);
  EXPECT_EQ(rep->ops_after.at("RandomUniformLike"), 2);
}

}  // namespace
}  // namespace sdx::test
