// Max/Min/Sum/Mean, Where and Clip through a session.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bound_test_util.h"
#include "kernel_test_util.h"

namespace sdx::test {
namespace {

TEST(ElementwiseVariadic, MeanOfThreeBroadcastInputs) {
  auto y = run_single("Mean", {f32({1, 2}, {2}), f32({3}, {1}), f32({5, 7, 2, 4}, {2, 2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{3, 4, 2, 3}));
}

TEST(ElementwiseVariadic, MaxPropagatesNaN) {
  auto y = run_single("Max", {f32({1, NAN}, {2}), f32({2, 0}, {2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y)[0], 2.f);
  EXPECT_TRUE(std::isnan(values<float>(*y)[1]));
}

// Max / Min of float32 x and one element c (the fast path) give the bits of the broadcasting path (c
// expanded to x's shape): either operand order, c = +0, -0, NaN, a number; x with NaN, +-0, +-inf.
TEST(ElementwiseVariadic, MaxMinWithAScalarMatchTheBroadcastPath) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> xv = {0.f, -0.f, 1.5f, -1.5f, nan, inf, -inf, -0.4f, 3.f};
  for (int i = 0; i < 100; ++i) xv.push_back(static_cast<float>(i % 13) * 0.1f - 0.6f);
  const int64_t n = static_cast<int64_t>(xv.size());
  const Tensor x = f32(xv, {n});
  for (const char* op : {"Max", "Min"}) {
    for (float c : {0.f, -0.f, nan, -0.4f}) {
      for (bool c_first : {false, true}) {
        SCOPED_TRACE(std::string(op) + " c " + std::to_string(c) + (c_first ? " first" : " second"));
        const Tensor cs = f32({c}, {1}), cx = f32(std::vector<float>(static_cast<size_t>(n), c), {n});
        auto fast = run_node(op, c_first ? std::vector<Tensor>{cs, x} : std::vector<Tensor>{x, cs}, {}, 13);
        auto full = run_node(op, c_first ? std::vector<Tensor>{cx, x} : std::vector<Tensor>{x, cx}, {}, 13);
        ASSERT_TRUE(fast.is_ok() && full.is_ok());
        EXPECT_TRUE(same_bits_nan_as_nan((*fast)[0], (*full)[0]));
        expect_bound_matches(
            NodeSpec{.op = op, .opset = 13, .inputs = c_first ? std::vector<Tensor>{cs, x} : std::vector<Tensor>{x, cs}});
      }
    }
  }
}

// Max / Min of 2 and 3 float32 inputs of one shape (the vectorized path) against the per-element rule:
// a NaN accumulator stays, else a NaN input wins, else the compare (ties keep the accumulator, so +0/-0
// follow operand order); vector bodies and tails, run() and the bound form.
TEST(ElementwiseVariadic, MaxMinOfSameShapesFollowTheNaNAndTieRule) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {0.f, -0.f, 1.5f, -1.5f, nan, inf, -inf, -0.4f, 3.f, 0.f, -0.f};
  std::vector<std::vector<float>> in(3);
  for (size_t k = 0; k < in.size(); ++k)
    for (size_t i = 0; i < 4 * 11 + 3; ++i) in[k].push_back(special[(i * (k + 2) + k) % special.size()]);
  const int64_t n = static_cast<int64_t>(in[0].size());
  for (const char* op : {"Max", "Min"}) {
    for (size_t count : {size_t{2}, size_t{3}}) {
      SCOPED_TRACE(std::string(op) + " of " + std::to_string(count));
      std::vector<Tensor> xs;
      std::vector<float> want(static_cast<size_t>(n));
      for (size_t k = 0; k < count; ++k) xs.push_back(f32(in[k], {n}));
      for (size_t i = 0; i < want.size(); ++i) {
        float acc = in[0][i];
        for (size_t k = 1; k < count; ++k) {
          const float b = in[k][i];
          const bool take = std::string(op) == "Max" ? acc < b : b < acc;
          acc = std::isnan(acc) ? acc : std::isnan(b) ? b : take ? b : acc;
        }
        want[i] = acc;
      }
      auto got = run_node(op, xs, {}, 13);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      EXPECT_TRUE(same_bits_nan_as_nan((*got)[0], f32(want, {n})));
      expect_bound_matches(NodeSpec{.op = op, .opset = 13, .inputs = xs});
    }
  }
}

TEST(ElementwiseVariadic, WhereBroadcastsCondition) {
  auto y = run_single("Where", {bools({true, false}, {2}), i64({1, 2, 3, 4}, {2, 2}), i64({0}, {})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>(*y), (std::vector<int64_t>{1, 0, 3, 0}));
}

TEST(ElementwiseVariadic, ClipInputsAndLegacyAttributes) {
  auto y = run_single("Clip", {f32({-5, 0, 5}, {3}), Tensor(), f32({1}, {})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{-5, 0, 1}));
  auto z = run_single("Clip", {f32({-5, 0, 5}, {3})}, {attr_f("min", -1), attr_f("max", 2)}, 6);
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  EXPECT_EQ(values<float>(*z), (std::vector<float>{-1, 0, 2}));
}

TEST(ElementwiseVariadic, ClipRejectsNonScalarBound) {
  auto y = run_single("Clip", {f32({1, 2}, {2}), f32({0, 0}, {2})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("scalar"), std::string::npos) << y.status().message();
}

TEST(ElementwiseVariadic, WhereRejectsNonBoolCondition) {
  auto y = run_single("Where", {f32({1}, {1}), f32({1}, {1}), f32({2}, {1})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("bool"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx::test
