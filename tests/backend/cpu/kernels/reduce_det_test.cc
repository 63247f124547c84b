#include "kernel_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(ReduceDet, BatchOfMatrices) {
  // det([[1,2],[3,4]]) = -2, det([[0,1],[1,0]]) = -1 (needs a pivot swap).
  auto y = run_node("Det", {f32({1, 2, 3, 4, 0, 1, 1, 0}, {2, 2, 2})}, {}, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].shape(), (Shape{2}));
  expect_near(values<float>((*y)[0]), {-2, -1});
}

TEST(ReduceDet, NonSquareIsAnError) {
  auto y = run_node("Det", {f32({1, 2, 3, 4, 5, 6}, {2, 3})}, {}, 11);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("[2, 3]"), std::string::npos) << y.status().to_string();
}

}  // namespace
}  // namespace sdx
