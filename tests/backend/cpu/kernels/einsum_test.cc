#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(Einsum, MatMulExplicitAndImplicit) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({5, 6, 7, 8}, {2, 2});
  auto y = run_node("Einsum", {a, b}, {attr_s("equation", "ij,jk->ik")}, 12);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{19, 22, 43, 50}));
  auto t = run_node("Einsum", {a}, {attr_s("equation", "ji")}, 12);  // implicit output "ij": a transpose
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(values<float>((*t)[0]), (std::vector<float>{1, 3, 2, 4}));
}

TEST(Einsum, IntegerUsesTheGenericLoop) {
  // int64 never takes the gemm path; the result must match the float matmul above.
  auto y = run_node("Einsum", {i64({1, 2, 3, 4}, {2, 2}), i64({5, 6, 7, 8}, {2, 2})}, {attr_s("equation", "ij,jk->ki")}, 12);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>((*y)[0]), (std::vector<int64_t>{19, 43, 22, 50}));
}

TEST(Einsum, DiagonalTraceAndEllipsis) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  auto d = run_node("Einsum", {a}, {attr_s("equation", "ii->i")}, 12);
  auto tr = run_node("Einsum", {a}, {attr_s("equation", "ii")}, 12);
  ASSERT_TRUE(d.is_ok() && tr.is_ok());
  EXPECT_EQ(values<float>((*d)[0]), (std::vector<float>{1, 4}));
  EXPECT_EQ((*tr)[0].rank(), 0);
  EXPECT_EQ(values<float>((*tr)[0]), (std::vector<float>{5}));
  // Broadcast batch dims: [2,1,2] x [2] -> [2,1]
  auto e = run_node("Einsum", {f32({1, 2, 3, 4}, {2, 1, 2}), f32({1, 1}, {2})}, {attr_s("equation", "...j,j->...")}, 12);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(values<float>((*e)[0]), (std::vector<float>{3, 7}));
}

TEST(Einsum, BadEquationsAreErrors) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  EXPECT_FALSE(run_node("Einsum", {a}, {attr_s("equation", "ijk->i")}, 12).is_ok());     // rank mismatch
  EXPECT_FALSE(run_node("Einsum", {a, a}, {attr_s("equation", "ij->i")}, 12).is_ok());    // term count
  EXPECT_FALSE(run_node("Einsum", {a, f32({1, 2, 3}, {3})}, {attr_s("equation", "ij,j->i")}, 12).is_ok());  // sizes
  EXPECT_FALSE(run_node("Einsum", {a}, {attr_s("equation", "ij->k")}, 12).is_ok());       // unknown output label
}

}  // namespace
}  // namespace sdx
