#include <cmath>
#include <string>
#include <vector>

#include "bound_test_util.h"
#include "kernel_test_util.h"
#include "vectorized_test_util.h"

namespace sdx {
namespace {
using namespace test;

TEST(NormLayer, LayerNormWithMeanAndInvStdDev) {
  // Row [1, 3]: mean 2, var 1 -> normalized [-1, 1]; scale 2, bias 1 -> [-1, 3]. Row [2, 6]: mean 4, var 4.
  auto y = run_node("LayerNormalization", {f32({1, 3, 2, 6}, {2, 2}), f32({2, 2}, {2}), f32({1, 1}, {2})},
                    {attr_f("epsilon", 0.f)}, 17, 3);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_near(values<float>((*y)[0]), {-1, 3, -1, 3}, 1e-4f);
  EXPECT_EQ((*y)[1].shape(), (Shape{2, 1}));
  expect_near(values<float>((*y)[1]), {2, 4});
  expect_near(values<float>((*y)[2]), {1, 0.5f});
}

TEST(NormLayer, RmsNorm) {
  auto y = run_node("RMSNormalization", {f32({3, 4}, {1, 2}), f32({1, 1}, {2})}, {attr_f("epsilon", 0.f)}, 23);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const float rms = std::sqrt(12.5f);
  expect_near(values<float>((*y)[0]), {3 / rms, 4 / rms});
}

TEST(NormLayer, GroupAndInstanceNorm) {
  Tensor x = f32({1, 3, 5, 7}, {1, 2, 2});  // N=1, C=2, spatial 2
  auto inst = run_node("InstanceNormalization", {x, f32({1, 1}, {2}), f32({0, 0}, {2})}, {attr_f("epsilon", 0.f)}, 6);
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  expect_near(values<float>((*inst)[0]), {-1, 1, -1, 1});
  auto grp = run_node("GroupNormalization", {x, f32({1, 1}, {2}), f32({0, 0}, {2})},
                      {attr_i("num_groups", 1), attr_f("epsilon", 0.f)}, 21);
  ASSERT_TRUE(grp.is_ok()) << grp.status().to_string();
  const float sd = std::sqrt(5.f);  // values 1,3,5,7: mean 4, var 5
  expect_near(values<float>((*grp)[0]), {-3 / sd, -1 / sd, 1 / sd, 3 / sd});
}

TEST(NormLayer, LpAndMvn) {
  auto lp = run_node("LpNormalization", {f32({3, 4}, {1, 2})}, {}, 1);
  ASSERT_TRUE(lp.is_ok());
  expect_near(values<float>((*lp)[0]), {0.6f, 0.8f});
  auto mvn = run_node("MeanVarianceNormalization", {f32({1, 3}, {2})}, {attr_ints("axes", {0})}, 13);
  ASSERT_TRUE(mvn.is_ok()) << mvn.status().to_string();
  expect_near(values<float>((*mvn)[0]), {-1, 1});
}

TEST(NormLayer, ZeroSizedInputs) {
  auto inst = run_node("InstanceNormalization", {f32({}, {2, 0, 3}), f32({}, {0}), f32({}, {0})}, {}, 6);
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  EXPECT_EQ((*inst)[0].shape(), (Shape{2, 0, 3}));
  auto ln = run_node("LayerNormalization", {f32({}, {0, 4}), f32({1, 1, 1, 1}, {4})}, {}, 17);
  ASSERT_TRUE(ln.is_ok()) << ln.status().to_string();
  EXPECT_EQ((*ln)[0].numel(), 0);
}

TEST(NormLayer, BadInputsAreErrors) {
  EXPECT_FALSE(run_node("LayerNormalization", {f32({1, 2}, {2}), f32({1, 1, 1}, {3})}, {}, 17).is_ok());
  EXPECT_FALSE(run_node("GroupNormalization", {f32({1, 2, 3}, {1, 3, 1}), f32({1, 1, 1}, {3}), f32({0, 0, 0}, {3})},
                        {attr_i("num_groups", 2)}, 21).is_ok());
  EXPECT_FALSE(run_node("LpNormalization", {f32({1, 2}, {2})}, {attr_i("p", 3)}, 1).is_ok());
}

// Float LayerNormalization / RMSNormalization rows on the vector kernels: every level against a
// double reference at odd row lengths, statistics outputs, 1 vs 2 threads, bound form.
TEST(NormLayer, VectorizedRowsMatchReferenceAndThreads) {
  for (cpu::simd::Isa isa : isa_levels()) {
    cpu::simd::ScopedIsa scope(isa);
    for (int64_t n : odd_sizes()) {
      const int64_t rows = 6;
      SCOPED_TRACE(std::string(cpu::simd::isa_name(isa)) + " n=" + std::to_string(n));
      std::vector<float> x = random_floats(rows * n, static_cast<uint32_t>(n));
      for (float& v : x) v += 5.f;  // a mean far from 0
      const std::vector<float> s = random_floats(n, 2, 1.f), b = random_floats(n, 3, 1.f);
      for (bool rms : {false, true}) {
        const std::string op = rms ? "RMSNormalization" : "LayerNormalization";
        std::vector<Tensor> inputs = {f32(x, {rows, n}), f32(s, {n})};
        if (!rms) inputs.push_back(f32(b, {n}));
        auto y = run_node(op, inputs, {attr_f("epsilon", 1e-5f)}, rms ? 23 : 17, rms ? 1 : 3);
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        std::vector<double> want, means, invs;
        for (int64_t r = 0; r < rows; ++r) {
          double mean = 0, var = 0;
          if (!rms) {
            for (int64_t k = 0; k < n; ++k) mean += x[r * n + k];
            mean /= static_cast<double>(n);
          }
          for (int64_t k = 0; k < n; ++k) var += (x[r * n + k] - mean) * (x[r * n + k] - mean);
          const double inv = 1 / std::sqrt(var / static_cast<double>(n) + 1e-5);
          means.push_back(mean);
          invs.push_back(inv);
          for (int64_t k = 0; k < n; ++k) want.push_back((x[r * n + k] - mean) * inv * s[k] + (rms ? 0.0 : b[k]));
        }
        // The float affine step rounds (x - mean) * inv once more than the reference.
        expect_close_ulps(values<float>((*y)[0]), want, 8, 4e-6);
        if (!rms) {
          expect_close_ulps(values<float>((*y)[1]), means, 1);
          expect_close_ulps(values<float>((*y)[2]), invs, 1);
        }
        expect_bound_matches({.op = op, .opset = rms ? 23 : 17, .inputs = inputs, .attrs = {attr_f("epsilon", 1e-5f)},
                              .num_outputs = rms ? 1 : 3},
                             rms ? std::vector<int>{1} : std::vector<int>{1, 2});
      }
    }
    const Tensor big = f32(random_floats(512 * 257, 1), {512, 257});
    expect_same_bits_at_1_and_2_threads(
        {.op = "LayerNormalization", .opset = 17, .inputs = {big, f32(random_floats(257, 2), {257}), f32(random_floats(257, 3), {257})}});
  }
}

}  // namespace
}  // namespace sdx
