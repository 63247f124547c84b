// BroadcastPlan: output shapes, per-input offsets and incompatible shapes.
#include "backend/cpu/tensor/broadcast.h"

#include <gtest/gtest.h>

#include <vector>

namespace sdx::cpu {
namespace {

TEST(BroadcastPlan, OutputShapeOfThreeInputs) {
  auto plan = BroadcastPlan::make({Shape{2, 1, 4}, Shape{3, 1}, Shape{}});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->output_shape(), (Shape{2, 3, 4}));
  EXPECT_FALSE(plan->is_identity(0));
}

TEST(BroadcastPlan, OffsetsFollowNumpy) {
  // a: [2, 3] values i, b: [3] values j: out[r][c] reads a[r*3+c], b[c].
  auto plan = BroadcastPlan::make({Shape{2, 3}, Shape{3}});
  ASSERT_TRUE(plan.is_ok());
  std::vector<int64_t> a_off, b_off, outs;
  plan->for_each([&](int64_t o, const int64_t* in) {
    outs.push_back(o);
    a_off.push_back(in[0]);
    b_off.push_back(in[1]);
  });
  EXPECT_EQ(outs, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(a_off, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b_off, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
}

TEST(BroadcastPlan, ColumnTimesRowWithMap) {
  auto plan = BroadcastPlan::make({Shape{3, 1}, Shape{1, 2}});
  ASSERT_TRUE(plan.is_ok());
  const int a[3] = {1, 2, 3};
  const int b[2] = {10, 100};
  int out[6] = {};
  broadcast_map(*plan, out, [](int x, int y) { return x * y; }, a, b);
  EXPECT_EQ(std::vector<int>(out, out + 6), (std::vector<int>{10, 100, 20, 200, 30, 300}));
}

TEST(BroadcastPlan, EmptyOutputVisitsNothing) {
  auto plan = BroadcastPlan::make({Shape{0, 3}, Shape{1, 3}});
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->output_shape(), (Shape{0, 3}));
  int calls = 0;
  plan->for_each_run([&](int64_t, const int64_t*, const int64_t*, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(BroadcastPlan, IncompatibleShapesAreAnError) {
  auto plan = BroadcastPlan::make({Shape{2, 3}, Shape{4}});
  ASSERT_FALSE(plan.is_ok());
  EXPECT_NE(plan.status().message().find("[2, 3]"), std::string::npos) << plan.status().message();
}

}  // namespace
}  // namespace sdx::cpu
