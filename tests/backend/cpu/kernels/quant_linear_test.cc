// Tests for src/backend/cpu/kernels/quant_linear.cc (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear).
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace test;

TEST(QuantizeLinearKernel, PerTensorUint8RoundsHalfToEvenAndSaturates) {
  Tensor x = make<float>(DType::kFloat32, {0.f, 2.f, 3.f, 1000.f, -254.f, -1000.f}, {6});
  Tensor s = make<float>(DType::kFloat32, {2.f}, {});
  Tensor z = make<uint8_t>(DType::kUint8, {128}, {});
  auto y = run_node("QuantizeLinear", {x, s, z});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // 3/2 = 1.5 rounds to 2; 1000/2 + 128 saturates; -254/2 + 128 = 1.
  EXPECT_EQ(values<uint8_t>((*y)[0]), (std::vector<uint8_t>{128, 129, 130, 255, 1, 0}));
}

TEST(QuantizeLinearKernel, PerAxisInt8) {
  Tensor x = make<float>(DType::kFloat32, {1.f, 2.f, 3.f, 4.f}, {2, 2});
  Tensor s = make<float>(DType::kFloat32, {1.f, 0.5f}, {2});
  Tensor z = make<int8_t>(DType::kInt8, {0, -1}, {2});
  auto y = run_node("QuantizeLinear", {x, s, z}, {attr_i("axis", 0)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int8_t>((*y)[0]), (std::vector<int8_t>{1, 2, 5, 7}));
}

TEST(QuantizeLinearKernel, BlockedToInt4WithOutputDtype) {
  Tensor x = make<float>(DType::kFloat32, {1.f, 2.f, 30.f, -40.f}, {1, 4});
  Tensor s = make<float>(DType::kFloat32, {1.f, 10.f}, {1, 2});
  auto y = run_node("QuantizeLinear", {x, s}, {attr_i("axis", 1), attr_i("block_size", 2), attr_i("output_dtype", 22)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // 1, 2, 3, -4 packed two per byte, low nibble first.
  EXPECT_EQ(bytes((*y)[0]), (std::vector<uint8_t>{0x21, 0xC3}));
}

TEST(QuantizeLinearKernel, MismatchedScaleIsAnError) {
  Tensor x = make<float>(DType::kFloat32, {1.f, 2.f, 3.f}, {3});
  Tensor s = make<float>(DType::kFloat32, {1.f, 2.f}, {2});
  EXPECT_FALSE(run_node("QuantizeLinear", {x, s}, {attr_i("axis", 0)}).is_ok());
}

TEST(DequantizeLinearKernel, PerAxisWithZeroPoint) {
  Tensor x = make<uint8_t>(DType::kUint8, {0, 3, 128, 255}, {2, 2});
  Tensor s = make<float>(DType::kFloat32, {2.f, 0.5f}, {2});
  Tensor z = make<uint8_t>(DType::kUint8, {1, 128}, {2});
  auto y = run_node("DequantizeLinear", {x, s, z}, {attr_i("axis", 0)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{-2.f, 4.f, 0.f, 63.5f}));
}

TEST(DequantizeLinearKernel, Float8Input) {
  Tensor x = make<uint8_t>(DType::kFloat8E4M3FN, {0x30, 0x7E}, {2});  // 0.5, 448
  Tensor s = make<float>(DType::kFloat32, {2.f}, {});
  auto y = run_node("DequantizeLinear", {x, s});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{1.f, 896.f}));
}

TEST(DequantizeLinearKernel, ZeroPointTypeMismatchIsAnError) {
  Tensor x = make<uint8_t>(DType::kUint8, {1}, {1});
  Tensor s = make<float>(DType::kFloat32, {1.f}, {});
  Tensor z = make<int8_t>(DType::kInt8, {0}, {});
  EXPECT_FALSE(run_node("DequantizeLinear", {x, s, z}).is_ok());
}

// The float32 / 8-bit fast paths, per tensor and per axis, against the onnx reference's arithmetic
// written out in double: an odd size over several parallel chunks, ties, NaN, infinities, values past
// the int32 range, saturation.
std::vector<float> awkward_floats(size_t n, float scale) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 300.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  const float specials[] = {std::nanf(""), INFINITY, -INFINITY, 1e30f, -1e30f, 3e9f, -3e9f, 2.5f * scale,
                            3.5f * scale, -0.5f * scale, -2.5f * scale, 0.f, -0.f, 127.5f * scale, -128.5f * scale};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i) v[i * 997 % n] = specials[i];
  return v;
}

// layout: per tensor ({3, 5, 4099}), per axis 1 of {3, 5, 4099}, or per the last axis of {12297, 5}.
enum class Layout { kTensor, kMiddleAxis, kLastAxis };

template <typename Q>
void check_fast_paths(DType qt, Layout layout) {
  const bool per_axis = layout != Layout::kTensor;
  const int64_t a = 5, inner = layout == Layout::kLastAxis ? 1 : 4099, n = 3 * a * 4099;  // > 3 chunks of 16384
  const std::vector<int64_t> xdims = layout == Layout::kLastAxis ? std::vector<int64_t>{3 * 4099, a}
                                                                 : std::vector<int64_t>{3, a, inner};
  std::vector<float> scales = {0.5f, 0.25f, 1.75f, 3.f, 0.01f};
  std::vector<Q> zps = {std::numeric_limits<Q>::min() == 0 ? Q(128) : Q(-3), Q(0), Q(7), Q(1), Q(100)};
  if (!per_axis) {
    scales.resize(1);
    zps.resize(1);
  }
  const std::vector<float> xs = awkward_floats(static_cast<size_t>(n), scales[0]);
  const std::vector<int64_t> pdims = per_axis ? std::vector<int64_t>{a} : std::vector<int64_t>{};
  std::vector<ir::Attribute> attrs;
  if (per_axis) attrs.push_back(attr_i("axis", layout == Layout::kLastAxis ? -1 : 1));
  auto p = [&](int64_t i) { return per_axis ? static_cast<size_t>((i / inner) % a) : size_t{0}; };

  auto q = run_node("QuantizeLinear", {make<float>(DType::kFloat32, xs, xdims), make<float>(DType::kFloat32, scales, pdims),
                                       make<Q>(qt, zps, pdims)}, attrs);
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  const std::vector<Q> got = values<Q>((*q)[0]);
  for (int64_t i = 0; i < n; ++i) {
    const double quotient = static_cast<float>(static_cast<double>(xs[i]) / scales[p(i)]);
    const double r = std::nearbyint(quotient);
    const double t = (r > -2147483649.0 && r < 2147483648.0) ? static_cast<double>(static_cast<int32_t>(r)) : INT32_MIN;
    const double want = std::clamp(t + zps[p(i)], double(std::numeric_limits<Q>::min()), double(std::numeric_limits<Q>::max()));
    ASSERT_EQ(static_cast<double>(got[static_cast<size_t>(i)]), want) << "x " << xs[i] << " at " << i;
  }

  auto d = run_node("DequantizeLinear", {make<Q>(qt, got, xdims), make<float>(DType::kFloat32, scales, pdims),
                                         make<Q>(qt, zps, pdims)}, attrs);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  const std::vector<float> back = values<float>((*d)[0]);
  for (int64_t i = 0; i < n; ++i) {
    const float dx = static_cast<float>(got[static_cast<size_t>(i)]) - static_cast<float>(zps[p(i)]);
    const float want = static_cast<float>(static_cast<double>(dx) * scales[p(i)]);
    ASSERT_EQ(back[static_cast<size_t>(i)], want) << "at " << i;
  }
}

TEST(QuantizeLinearKernel, FastPathsMatchTheReferenceArithmetic) {
  for (Layout layout : {Layout::kTensor, Layout::kMiddleAxis, Layout::kLastAxis}) {
    check_fast_paths<uint8_t>(DType::kUint8, layout);
    check_fast_paths<int8_t>(DType::kInt8, layout);
  }
}

TEST(DynamicQuantizeLinearKernel, OnnxExample) {
  Tensor x = make<float>(DType::kFloat32, {0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f}, {6});
  auto y = run_node("DynamicQuantizeLinear", {x}, {}, 11, 3);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<uint8_t>((*y)[0]), (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ(values<float>((*y)[1])[0], 5.f / 255.f);
  EXPECT_EQ(values<uint8_t>((*y)[2])[0], 153);
}

// The vector range and quantize_row against the onnx formula element by element: odd lengths (vector
// tails), all-positive, all-negative and mixed ranges, halves that round to even, and a NaN (the element
// loops: NaN does not widen the range).
TEST(DynamicQuantizeLinearKernel, VectorPathMatchesTheFormula) {
  std::mt19937 gen(23);
  auto check = [](const std::vector<float>& v) {
    float mx = 0.f, mn = 0.f;
    for (float e : v) mx = std::max(mx, e), mn = std::min(mn, e);
    const float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
    const float zp = std::nearbyint(std::clamp(0.0f - mn / scale, 0.0f, 255.0f));
    auto y = run_node("DynamicQuantizeLinear", {f32(v, {static_cast<int64_t>(v.size())})}, {}, 11, 3);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_EQ(values<float>((*y)[1])[0], scale);
    EXPECT_EQ(values<uint8_t>((*y)[2])[0], static_cast<uint8_t>(zp));
    const std::vector<uint8_t> got = values<uint8_t>((*y)[0]);
    for (size_t i = 0; i < v.size(); ++i) {
      if (std::isnan(v[i])) continue;
      EXPECT_EQ(got[i], static_cast<uint8_t>(std::clamp(std::nearbyint(v[i] / scale) + zp, 0.0f, 255.0f))) << i << " " << v[i];
    }
  };
  for (auto [lo, hi, n] : std::vector<std::tuple<float, float, int>>{{-3.f, 5.f, 1001}, {0.5f, 2.f, 37}, {-7.f, -1.f, 64}, {-1.f, 1.f, 3}}) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& e : v) e = dist(gen);
    check(v);
  }
  check({-2.55f, 0.f, 2.55f, 0.01f, 0.005f, -0.005f, 1.275f});  // scale 0.02: halves
  std::vector<float> with_nan = {0.5f, -1.f, std::numeric_limits<float>::quiet_NaN(), 2.f};
  check(with_nan);
}

TEST(DynamicQuantizeLinearKernel, NonFloatInputIsAnError) {
  Tensor x = make<int32_t>(DType::kInt32, {1}, {1});
  EXPECT_FALSE(run_node("DynamicQuantizeLinear", {x}, {}, 11, 3).is_ok());
}

}  // namespace
}  // namespace sdx
