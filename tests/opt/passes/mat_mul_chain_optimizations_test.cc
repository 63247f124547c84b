#include "../pass_test_util.h"

namespace sdx::test {
namespace {

const std::vector<std::string> kPasses = {"MatMulChainOptimizations"};

// x[.., K] @ W1[K, N1] @ W2[N1, N2].
ir::Model chain(int64_t k, int64_t n1, int64_t n2, bool share_inner) {
  ModelBuilder b;
  ir::Value* x = b.input("x", {2, 5, k});
  ir::Value* inner = b.op("MatMul", {x, b.constant("w1", random_f32({k, n1}, 11))});
  ir::Value* outer = b.op("MatMul", {inner, b.constant("w2", random_f32({n1, n2}, 12))});
  b.output(b.op("Relu", {outer}));
  if (share_inner) b.output(b.op("Exp", {inner}));
  return b.model();
}

TEST(MatMulChainOptimizations, FoldsWhenTheProductIsCheaper) {
  // K*N2 = 16*4 = 64 < K*N1 + N1*N2 = 128 + 32.
  PassCheck r = check_pass(
      kPasses, [] { return chain(16, 8, 4, false); }, {{"x", Datum::tensor(random_f32({2, 5, 16}, 1))}}, /*rtol=*/1e-5,
      /*atol=*/1e-5);
  EXPECT_EQ(r.report.rewrites_of("MatMulChainOptimizations"), 1);
  EXPECT_EQ(r.ops_after.at("MatMul"), 1);
}

TEST(MatMulChainOptimizations, KeepsLowRankFactorsAndSharedIntermediates) {
  // K*N2 = 16*16 = 256 > K*N1 + N1*N2 = 32 + 32: the factorization is cheaper than its product.
  PassCheck low_rank =
      check_pass(kPasses, [] { return chain(16, 2, 16, false); }, {{"x", Datum::tensor(random_f32({2, 5, 16}, 2))}});
  EXPECT_EQ(low_rank.report.rewrites_of("MatMulChainOptimizations"), 0);
  // The inner product is read elsewhere too.
  PassCheck shared =
      check_pass(kPasses, [] { return chain(16, 8, 4, true); }, {{"x", Datum::tensor(random_f32({2, 5, 16}, 3))}});
  EXPECT_EQ(shared.report.rewrites_of("MatMulChainOptimizations"), 0);
}

}  // namespace
}  // namespace sdx::test
