#include "reduce_test_util.h"

namespace sdx {
namespace {
using namespace reduce_test;

TEST(Einsum, MatMulExplicitAndImplicit) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({5, 6, 7, 8}, {2, 2});
  auto y = run("Einsum", {a, b}, {attr_str("equation", "ij,jk->ik")}, 12);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(vals<float>((*y)[0]), (std::vector<float>{19, 22, 43, 50}));
  auto t = run("Einsum", {a}, {attr_str("equation", "ji")}, 12);  // implicit output "ij": a transpose
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(vals<float>((*t)[0]), (std::vector<float>{1, 3, 2, 4}));
}

TEST(Einsum, IntegerUsesTheGenericLoop) {
  // int64 never takes the gemm path; the result must match the float matmul above.
  auto y = run("Einsum", {i64({1, 2, 3, 4}, {2, 2}), i64({5, 6, 7, 8}, {2, 2})}, {attr_str("equation", "ij,jk->ki")}, 12);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(vals<int64_t>((*y)[0]), (std::vector<int64_t>{19, 43, 22, 50}));
}

TEST(Einsum, DiagonalTraceAndEllipsis) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  auto d = run("Einsum", {a}, {attr_str("equation", "ii->i")}, 12);
  auto tr = run("Einsum", {a}, {attr_str("equation", "ii")}, 12);
  ASSERT_TRUE(d.is_ok() && tr.is_ok());
  EXPECT_EQ(vals<float>((*d)[0]), (std::vector<float>{1, 4}));
  EXPECT_EQ((*tr)[0].rank(), 0);
  EXPECT_EQ(vals<float>((*tr)[0]), (std::vector<float>{5}));
  // Broadcast batch dims: [2,1,2] x [2] -> [2,1]
  auto e = run("Einsum", {f32({1, 2, 3, 4}, {2, 1, 2}), f32({1, 1}, {2})}, {attr_str("equation", "...j,j->...")}, 12);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(vals<float>((*e)[0]), (std::vector<float>{3, 7}));
}

TEST(Einsum, BadEquationsAreErrors) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  EXPECT_FALSE(run("Einsum", {a}, {attr_str("equation", "ijk->i")}, 12).is_ok());     // rank mismatch
  EXPECT_FALSE(run("Einsum", {a, a}, {attr_str("equation", "ij->i")}, 12).is_ok());    // term count
  EXPECT_FALSE(run("Einsum", {a, f32({1, 2, 3}, {3})}, {attr_str("equation", "ij,j->i")}, 12).is_ok());  // sizes
  EXPECT_FALSE(run("Einsum", {a}, {attr_str("equation", "ij->k")}, 12).is_ok());       // unknown output label
}

}  // namespace
}  // namespace sdx
