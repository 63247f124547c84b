#include "opt/algebra_util.h"

#include <gtest/gtest.h>

namespace sdx::test {
namespace {

TEST(AlgebraUtil, BroadcastsIntoOnlyWhenTheShapeStays) {
  ir::Graph g("g");
  ir::Value* x = g.add_input(
      "x", ir::TypeInfo::tensor(DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbolic("n"), ir::Dim::fixed(3)}));
  EXPECT_TRUE(opt::broadcasts_into({}, x));
  EXPECT_TRUE(opt::broadcasts_into({3}, x));
  EXPECT_TRUE(opt::broadcasts_into({1, 3}, x));
  EXPECT_FALSE(opt::broadcasts_into({2, 3}, x));     // n may be 1
  EXPECT_FALSE(opt::broadcasts_into({1, 1, 3}, x));  // rank grows
  EXPECT_FALSE(opt::broadcasts_into({4}, x));
  ir::Value* unknown = g.add_input("u", ir::TypeInfo::tensor(DType::kFloat32));
  EXPECT_FALSE(opt::broadcasts_into({}, unknown));
}

TEST(AlgebraUtil, BroadcastsStaticShapes) {
  EXPECT_EQ(opt::broadcast_static({{3, 1}, {4}, {}}), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(opt::broadcast_static({{2, 3}, {2, 3}}), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(opt::broadcast_static({{0}, {1}}), (std::vector<int64_t>{0}));
  EXPECT_FALSE(opt::broadcast_static({{3}, {4}}).has_value());
}

}  // namespace
}  // namespace sdx::test
