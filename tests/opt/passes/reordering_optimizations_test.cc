// The rewrites read the same elements in the same order of accumulation (Gemm with a flag reads A^T
// itself; a transposed constant holds the same values), so the default check_pass tolerance
// (rtol 1e-5, atol 1e-6) applies.
#include "../pass_test_util.h"
#include "ir/type_inference.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPass = {"ReorderingOptimizations"};

// The graph after only `kPass` ran (for inspecting attributes).
std::shared_ptr<ir::Graph> optimized(const std::function<ir::Model()>& build) {
  ir::Model m = build();
  EXPECT_TRUE(ir::infer_types(*m.graph).is_ok());
  EXPECT_TRUE(opt::optimize(*m.graph, only(kPass)).is_ok());
  return m.graph;
}

TEST(ReorderingOptimizations, CancelsAndComposesTransposes) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3, 4});
    ir::Value* t = b.op("Transpose", {b.op("Transpose", {x}, {attr_ints("perm", {1, 0, 2})})},
                        {attr_ints("perm", {1, 0, 2})});  // identity overall
    ir::Value* u = b.op("Transpose", {b.op("Transpose", {b.op("Relu", {t})}, {attr_ints("perm", {0, 2, 1})})},
                        {attr_ints("perm", {2, 0, 1})});  // one Transpose with perm [1, 0, 2]
    b.output(b.op("Neg", {u}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2, 3, 4}, 1))}});
  EXPECT_EQ(r.report.rewrites_of("ReorderingOptimizations"), 2);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Neg", 1}, {"Relu", 1}, {"Transpose", 1}}));
  auto g = optimized(build);
  for (const auto& n : g->nodes()) {
    if (n->op_type() == "Transpose") {
      EXPECT_EQ(n->attr_ints("perm"), (std::vector<int64_t>{1, 0, 2}));
    }
  }
}

TEST(ReorderingOptimizations, FoldsTransposesIntoGemmFlags) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* a = b.input("a", {3, 2});
    ir::Value* w = b.input("w", {3, 4});
    ir::Value* at = b.op("Transpose", {a}, {attr_ints("perm", {1, 0})});  // [2, 3]
    ir::Value* wt = b.op("Transpose", {w});                               // default perm: [4, 3]
    // Gemm(A^T, W^T, transB=1) = A^T W -> Gemm(A, W, transA=1, transB=0).
    b.output(b.op("Gemm", {at, wt, b.constant("c", f32({1, 2, 3, 4}, {4}))}, {attr_i("transB", 1)}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build,
                           {{"a", Datum::tensor(random_f32({3, 2}, 2))}, {"w", Datum::tensor(random_f32({3, 4}, 3))}});
  EXPECT_EQ(r.report.rewrites_of("ReorderingOptimizations"), 2);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Gemm", 1}}));
  auto g = optimized(build);
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0]->attr_int("transA", 0), 1);
  EXPECT_EQ(g->nodes()[0]->attr_int("transB", 1), 0);
}

TEST(ReorderingOptimizations, TransposesConstantMatMulWeights) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* w = b.constant("w", random_f32({4, 3}, 4));
    b.output(b.op("MatMul", {x, b.op("Transpose", {w}, {attr_ints("perm", {1, 0})})}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2, 3}, 5))}});
  EXPECT_EQ(r.report.rewrites_of("ReorderingOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"MatMul", 1}}));
}

TEST(ReorderingOptimizations, KeepsTransposesNoConsumerAbsorbs) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* w = b.input("w", {2, 4});
    // MatMul has no transpose flags and w is not constant; Relu reads the transposed layout.
    ir::Value* xt = b.op("Transpose", {x}, {attr_ints("perm", {1, 0})});
    b.output(b.op("MatMul", {xt, w}));
    b.output(b.op("Relu", {xt}));
    return b.model();
  };
  PassCheck r = check_pass(kPass, build,
                           {{"x", Datum::tensor(random_f32({2, 3}, 6))}, {"w", Datum::tensor(random_f32({2, 4}, 7))}});
  EXPECT_EQ(r.report.rewrites_of("ReorderingOptimizations"), 0);
  EXPECT_EQ(r.ops_after.at("Transpose"), 1);
}

TEST(ReorderingOptimizations, CancellingPairThatMakesAGraphOutputBecomesOneTranspose) {
  auto build = [] {
    ModelBuilder b;
    ir::Value* x = b.input("x", {2, 3});
    b.output(b.op("Transpose", {b.op("Transpose", {x})}));  // the output keeps its name and producer
    return b.model();
  };
  PassCheck r = check_pass(kPass, build, {{"x", Datum::tensor(random_f32({2, 3}, 8))}});
  EXPECT_EQ(r.report.rewrites_of("ReorderingOptimizations"), 1);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"Transpose", 1}}));
}

}  // namespace
}  // namespace sdx::test
