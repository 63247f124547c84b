// BroadcastPlan: output shapes, per-input offsets and incompatible shapes.
#include "backend/cpu/tensor/broadcast.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
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

// Runs where one input is fixed and the other contiguous (either order), and a strided run, against
// the per-element offsets of for_each; a non-trivially-copyable element type (held by reference).
TEST(BroadcastPlan, MapWithOneInputFixedAlongTheRun) {
  for (const auto& [sa, sb] : {std::pair{Shape{5, 1}, Shape{1, 7}}, std::pair{Shape{1, 7}, Shape{5, 1}},
                              std::pair{Shape{2, 3, 1}, Shape{3, 4}}, std::pair{Shape{4, 1, 3}, Shape{2, 1}}}) {
    auto plan = BroadcastPlan::make({sa, sb});
    ASSERT_TRUE(plan.is_ok());
    std::vector<int> a(static_cast<size_t>(sa.numel())), b(static_cast<size_t>(sb.numel()));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int>(i % 3);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int>(i % 4);
    std::vector<bool> want(static_cast<size_t>(plan->numel()));
    plan->for_each([&](int64_t o, const int64_t* in) { want[static_cast<size_t>(o)] = a[in[0]] == b[in[1]]; });
    std::vector<uint8_t> got(want.size(), 7);
    broadcast_map(*plan, got.data(), [](int x, int y) -> uint8_t { return x == y; }, a.data(), b.data());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i] ? 1 : 0) << sa.to_string() << " " << i;
  }
  auto plan = BroadcastPlan::make({Shape{2, 1}, Shape{1, 3}});
  ASSERT_TRUE(plan.is_ok());
  const std::string a[2] = {"x", "y"}, b[3] = {"1", "2", "3"};
  std::string out[6];
  broadcast_map(*plan, out, [](const std::string& x, const std::string& y) { return x + y; }, a, b);
  EXPECT_EQ(std::vector<std::string>(out, out + 6), (std::vector<std::string>{"x1", "x2", "x3", "y1", "y2", "y3"}));
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
