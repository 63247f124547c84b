#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(NnPool, MaxPoolWithIndices) {
  auto y = run_node("MaxPool", {f32({1, 5, 3, 2, 9, 0, 4, 4, 8}, {1, 1, 3, 3})},
                    {attr_ints("kernel_shape", {2, 2})}, 12, 2);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {9, 9, 9, 9});
  EXPECT_EQ(values<int64_t>((*y)[1]), (std::vector<int64_t>{4, 4, 4, 4}));
}

TEST(NnPool, AveragePoolCountIncludePad) {
  const Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  auto excl = run_node("AveragePool", {x}, {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {1, 1, 0, 0})}, 11);
  ASSERT_TRUE(excl.is_ok()) << excl.status().to_string();
  expect_near(values<float>((*excl)[0]), {1, 1.5f, 2, 2.5f});
  auto incl = run_node("AveragePool", {x},
                       {attr_ints("kernel_shape", {2, 2}), attr_ints("pads", {1, 1, 0, 0}), attr_i("count_include_pad", 1)},
                       11);
  ASSERT_TRUE(incl.is_ok()) << incl.status().to_string();
  expect_near(values<float>((*incl)[0]), {0.25f, 0.75f, 1, 2.5f});
}

TEST(NnPool, GlobalAverageAndLp) {
  auto avg = run_node("GlobalAveragePool", {f32({1, 2, 3, 4, 3, 4}, {1, 2, 3})});
  ASSERT_TRUE(avg.is_ok()) << avg.status().to_string();
  EXPECT_EQ((*avg)[0].shape(), (Shape{1, 2, 1}));
  expect_near(values<float>((*avg)[0]), {2, 11.0f / 3});
  auto lp = run_node("GlobalLpPool", {f32({3, 4}, {1, 1, 2})});
  ASSERT_TRUE(lp.is_ok()) << lp.status().to_string();
  expect_near(values<float>((*lp)[0]), {5});
}

// float32 GlobalAveragePool / GlobalMaxPool run a plane per vector row (sum in double): the mean
// within float rounding of a double reference, the max exact, a NaN in a plane its max (np.max), at
// plane sizes below, at and above a vector.
TEST(NnPool, GlobalPoolsOnTheVectorKernels) {
  for (int64_t hw : {1, 7, 16, 49, 1000}) {
    SCOPED_TRACE(hw);
    const int64_t planes = 2 * 5;
    std::vector<float> x(static_cast<size_t>(planes * hw));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 250.f - 2.f;
    x[static_cast<size_t>(3 * hw + hw / 2)] = std::numeric_limits<float>::quiet_NaN();  // plane 3
    const Tensor t = f32(x, {2, 5, hw, 1});
    auto avg = run_node("GlobalAveragePool", {t}, {}, 1);
    auto mx = run_node("GlobalMaxPool", {t}, {}, 1);
    ASSERT_TRUE(avg.is_ok() && mx.is_ok());
    for (int64_t p = 0; p < planes; ++p) {
      double sum = 0;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < hw; ++i) {
        sum += x[static_cast<size_t>(p * hw + i)];
        m = std::max(m, x[static_cast<size_t>(p * hw + i)]);
      }
      const float a = (*avg)[0].data<float>()[p], b = (*mx)[0].data<float>()[p];
      if (p == 3) {
        EXPECT_TRUE(std::isnan(a) && std::isnan(b));
        continue;
      }
      EXPECT_NEAR(a, sum / hw, 1e-6);
      EXPECT_EQ(b, m);
    }
  }
}

TEST(NnPool, RejectsRankMismatch) {
  auto y = run_node("MaxPool", {f32({1, 2, 3, 4}, {1, 1, 4})}, {attr_ints("kernel_shape", {2, 2})}, 12);
  EXPECT_FALSE(y.is_ok());
}

TEST(NnPool, MaxUnpoolRejectsOutOfRangeIndex) {
  auto ok = run_node("MaxUnpool", {f32({7}, {1, 1, 1, 1}), i64({3}, {1, 1, 1, 1})},
                     {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, 11);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  expect_near(values<float>((*ok)[0]), {0, 0, 0, 7});
  auto bad = run_node("MaxUnpool", {f32({7}, {1, 1, 1, 1}), i64({4}, {1, 1, 1, 1})},
                      {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, 11);
  EXPECT_FALSE(bad.is_ok());
}

}  // namespace
}  // namespace sdx
