// LinearFusionOptimizations: MatMul + bias [+ activation] becomes sdx.Linear. The fused kernel
// repeats the unfused arithmetic, so the check is exact (rtol 0, atol 0).
#include <set>
#include <string>

#include "../pass_test_util.h"
#include "ir/type_inference.h"

namespace sdx::test {
namespace {

constexpr const char* kPass = "LinearFusionOptimizations";

Datum feed(const std::vector<int64_t>& dims, unsigned seed) { return Datum::tensor(random_f32(dims, seed, -3.f, 3.f)); }

TEST(LinearFusionOptimizations, BiasAndActivationForms) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {2, 3, 8});
    auto mm = [&](const std::string& k, int64_t n) {
      return b.op("MatMul", {x, b.constant("w" + k, random_f32({8, n}, static_cast<unsigned>(n)))});
    };
    // nn.Linear + ReLU
    b.output(b.op("Relu", {b.op("Add", {mm("1", 6), b.constant("b1", random_f32({6}, 1))})}));
    // bias [1, N] on the left, relu6 as Clip(0, 6)
    ir::Value* add2 = b.op("Add", {b.constant("b2", random_f32({1, 5}, 2)), mm("2", 5)});
    b.output(b.op("Clip", {add2, b.constant("lo", f32({0.f}, {})), b.constant("hi", f32({6.f}, {}))}));
    // bias only; Gelu (opset 20 node) without bias
    b.output(b.op("Add", {mm("3", 4), b.constant("b3", random_f32({4}, 3))}));
    b.output(b.op("Gelu", {mm("4", 7)}, {}, 1, "", 20));
    // LeakyRelu after a bias
    b.output(
        b.op("LeakyRelu", {b.op("Add", {mm("5", 3), b.constant("b5", random_f32({3}, 5))})}, {attr_f("alpha", 0.2f)}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({2, 3, 8}, 1)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 5);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.Linear", 5}}));
}

TEST(LinearFusionOptimizations, LeavesNonConstantWeightsBroadcastingBiasesAndSharedProductsAlone) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {3, 8});
    ir::Value* w = b.input("w", {8, 4});
    // W is a graph input.
    b.output(b.op("Relu", {b.op("Add", {b.op("MatMul", {x, w}), b.constant("b1", random_f32({4}, 1))})}));
    // The bias broadcasts the result to [2, 3, 4].
    ir::Value* m2 = b.op("MatMul", {x, b.constant("w2", random_f32({8, 4}, 2))});
    b.output(b.op("Add", {m2, b.constant("b2", random_f32({2, 1, 4}, 3))}));
    // A per-row bias [3, 1] is not a per-feature bias.
    ir::Value* m3 = b.op("MatMul", {x, b.constant("w3", random_f32({8, 4}, 4))});
    b.output(b.op("Add", {m3, b.constant("b3", random_f32({3, 1}, 5))}));
    // The product is read twice.
    ir::Value* m4 = b.op("MatMul", {x, b.constant("w4", random_f32({8, 4}, 6))});
    b.output(b.op("Relu", {m4}));
    b.output(m4);
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({3, 8}, 2)}, {"w", feed({8, 4}, 3)}}, 0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
  EXPECT_EQ(r.ops_after.count("sdx.Linear"), 0u);
}

}  // namespace
}  // namespace sdx::test

namespace sdx::test {
namespace {

// Gemm (transB 0/1, C as [N], [1, N] or a scalar, beta != 1, no C) [+ activation] -> sdx.Linear.
// Gemm adds C inside its accumulation, sdx.Linear after it: equal up to float summation order.
TEST(LinearFusionOptimizations, GemmForms) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {3, 40});
    auto w = [&](const std::string& k, std::vector<int64_t> dims) {
      return b.constant("w" + k, random_f32(dims, static_cast<unsigned>(dims[0] * 7 + dims[1])));
    };
    // nn.Linear as torch exports it: Gemm(transB=1) + Relu
    b.output(b.op("Relu", {b.op("Gemm", {x, w("1", {6, 40}), b.constant("c1", random_f32({6}, 1))},
                                {attr_i("transB", 1)})}));
    // C [1, N], beta 0.5, Sigmoid
    b.output(b.op("Sigmoid", {b.op("Gemm", {x, w("2", {40, 5}), b.constant("c2", random_f32({1, 5}, 2))},
                                   {attr_f("beta", 0.5f)})}));
    // scalar C, no activation
    b.output(b.op("Gemm", {x, w("3", {4, 40}), b.constant("c3", f32({0.25f}, {}))}, {attr_i("transB", 1)}));
    // no C
    b.output(b.op("Tanh", {b.op("Gemm", {x, w("4", {40, 3})})}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({3, 40}, 4)}}, 1e-6, 1e-6);
  EXPECT_EQ(r.report.rewrites_of(kPass), 4);
  EXPECT_EQ(r.ops_after, (std::map<std::string, int>{{"sdx.Linear", 4}}));
}

// An unrolled LSTM's steps: three Gemm(transB=1) over one weight share one transposed constant.
TEST(LinearFusionOptimizations, GemmsOfOneWeightShareItsTransposedCopy) {
  ir::Model m = [] {
    ModelBuilder b(17);
    ir::Value* w = b.constant("w_ih", random_f32({6, 40}, 5));
    for (int t = 0; t < 3; ++t) {
      ir::Value* x = b.input("x" + std::to_string(t), {1, 40});
      b.output(b.op("Gemm", {x, w, b.constant("c" + std::to_string(t), random_f32({6}, 6))}, {attr_i("transB", 1)}));
    }
    return b.model();
  }();
  ASSERT_TRUE(ir::infer_types(*m.graph).is_ok());
  ASSERT_TRUE(opt::optimize(*m.graph, only({kPass})).is_ok());
  std::set<const ir::Value*> weights;
  for (const auto& n : m.graph->nodes())
    if (!n->removed() && n->op_type() == "Linear") weights.insert(n->input(1));
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_EQ((*weights.begin())->name(), "w_ih/transposed");
}

TEST(LinearFusionOptimizations, LeavesOtherGemmsAlone) {
  auto build = [] {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", {3, 8});
    ir::Value* xt = b.input("xt", {8, 3});
    // alpha != 1
    b.output(b.op("Gemm", {x, b.constant("w1", random_f32({8, 4}, 1))}, {attr_f("alpha", 2.f)}));
    // transA
    b.output(b.op("Gemm", {xt, b.constant("w2", random_f32({8, 4}, 2))}, {attr_i("transA", 1)}));
    // C [M, N] varies per row
    b.output(b.op("Gemm", {x, b.constant("w3", random_f32({8, 4}, 3)), b.constant("c3", random_f32({3, 4}, 4))}));
    // W not constant
    b.output(b.op("Gemm", {x, b.input("w", {8, 4})}));
    return b.model();
  };
  PassCheck r = check_pass({kPass}, build, {{"x", feed({3, 8}, 5)}, {"xt", feed({8, 3}, 6)}, {"w", feed({8, 4}, 7)}},
                           0, 0);
  EXPECT_EQ(r.report.rewrites_of(kPass), 0);
}

}  // namespace
}  // namespace sdx::test
