// Folding is exact (the CPU kernel computes the value once), so outputs are compared with the
// default check_pass tolerance and most of them are exactly equal.
#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"ConstantFunctionOptimizations"};

TEST(ConstantFunctionOptimizations, TurnsConstantNodesIntoInitializersAndFoldsChains) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* a = b.op("Constant", {}, {attr_t("value", f32({1, 2, 3}, {3}))});
    ir::Value* two = b.op("Constant", {}, {attr_f("value_float", 2.f)});
    ir::Value* bias = b.op("Neg", {b.op("Mul", {a, two})});  // -(a * 2), all constant
    ir::Value* shape = b.op("Constant", {}, {attr_ints("value_ints", {3, 2})});
    b.output(b.op("Reshape", {b.op("Add", {x, bias}), shape}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2, 3}, 1))}});
  EXPECT_EQ(r.report.rewrites_of("ConstantFunctionOptimizations"), 5);  // 3 Constants, Mul, Neg
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"Reshape", 1}}));
}

TEST(ConstantFunctionOptimizations, FoldsEveryOutputOfAMultiOutputNode) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2});
    ir::Value* w = b.constant("w", f32({1, 2, 3, 4}, {4}));
    b.op("Split", {w, b.constant("split", i64({2, 2}, {2}))}, {}, 2);
    ir::Node* split = b.last_node();
    ir::Value* y = b.op("Mul", {b.op("Add", {x, split->output(0)}), split->output(1)});
    b.output(y);
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2}, 2))}});
  EXPECT_EQ(r.report.rewrites_of("ConstantFunctionOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"Mul", 1}}));
}

TEST(ConstantFunctionOptimizations, FoldsShapeComputationsOfInitializers) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {6});
    ir::Value* w = b.constant("w", f32(std::vector<float>(6, 1.f), {2, 3}));
    ir::Value* shape = b.op("Shape", {w});  // [2, 3]
    ir::Value* zeros = b.op("ConstantOfShape", {shape}, {attr_t("value", f32({0.5f}, {1}))});
    ir::Value* y = b.op("Reshape", {x, shape});
    b.output(b.op("Add", {y, zeros}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({6}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("ConstantFunctionOptimizations"), 2);  // Shape, ConstantOfShape
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Add", 1}, {"Reshape", 1}}));
}

TEST(ConstantFunctionOptimizations, KeepsFoldsThatGrowTheModelAndGraphOutputs) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {64, 64});
    // 16 KiB of ones from a 16-byte shape: stays a node.
    ir::Value* ones =
        b.op("ConstantOfShape", {b.constant("shape", i64({64, 64}, {2}))}, {attr_t("value", f32({1.f}, {1}))});
    // float16 -> float32 doubles 8 KiB of weights: stays a node.
    Tensor h = Tensor::allocate(DType::kFloat16, Shape{64, 64}, cpu_allocator(), /*zero=*/true).value();
    ir::Value* w = b.op("Cast", {b.constant("w16", h)}, {attr_i("to", 1)});
    b.output(b.op("Add", {b.op("Mul", {x, ones}), w}));
    // A Constant that is itself a graph output keeps its node (and its name).
    b.output(b.op("Constant", {}, {attr_t("value", f32({7}, {1}))}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({64, 64}, 4))}});
  EXPECT_EQ(r.report.rewrites_of("ConstantFunctionOptimizations"), 0);
  EXPECT_EQ(r.ops_after.at("ConstantOfShape"), 1);
  EXPECT_EQ(r.ops_after.at("Cast"), 1);
  EXPECT_EQ(r.ops_after.at("Constant"), 1);
}

TEST(ConstantFunctionOptimizations, LeavesNodesWithGraphInputsOrSubgraphsAlone) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* c = b.constant("c", f32({1, 2, 3}, {3}));
    b.output(b.op("Add", {x, c}));  // x is not constant
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({3}, 5))}});
  EXPECT_EQ(r.report.rewrites_of("ConstantFunctionOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
