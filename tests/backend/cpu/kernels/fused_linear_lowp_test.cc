// sdx.Linear with lower-precision weights (X float32; W float16, or W int8 with per-column W_scale):
// against the float32 sdx.Linear on the widened weights (bitwise: the kernel widens exactly and keeps
// the float32 path's FMA chain), against a double reference, small M (the small-M kernel) and large M
// (widened copy + gemm), bound form vs run() bitwise, the 2-thread pool vs inline bitwise, and errors.
#include <algorithm>
#include <cmath>

#include "backend/cpu/threading/thread_pool.h"
#include "fused_test_util.h"

namespace sdx::test {
namespace {

NodeSpec linear(std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {}) {
  return NodeSpec{.op = "Linear", .domain = "sdx", .opset = 1, .inputs = std::move(inputs), .attrs = std::move(attrs)};
}

Tensor widen_f16(const Tensor& w) {
  Tensor t = Tensor::allocate(DType::kFloat32, w.shape()).value();
  for (int64_t i = 0; i < w.numel(); ++i) t.data<float>()[i] = w.data<Float16>()[i].to_float();
  return t;
}

// int8 weights with values in [-127, 127] and positive scales.
Tensor random_int8(const std::vector<int64_t>& dims, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-127, 127);
  Tensor t = Tensor::allocate(DType::kInt8, Shape(dims)).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(dist(gen));
  return t;
}
Tensor widen_i8(const Tensor& w) {
  Tensor t = Tensor::allocate(DType::kFloat32, w.shape()).value();
  for (int64_t i = 0; i < w.numel(); ++i) t.data<float>()[i] = static_cast<float>(w.data<int8_t>()[i]);
  return t;
}

// y = act(scale[n] * sum_k x w + b) in double, x [M, K] (leading dims flattened).
std::vector<double> reference(const Tensor& x, const Tensor& w32, const Tensor* scale, const Tensor* b, bool relu) {
  const int64_t K = w32.shape()[0], N = w32.shape()[1], M = x.numel() / K;
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(x.data<float>()[m * K + k]) * w32.data<float>()[k * N + n];
      if (scale) acc *= scale->data<float>()[n];
      if (b) acc += b->data<float>()[n];
      y[static_cast<size_t>(m * N + n)] = relu ? std::max(acc, 0.0) : acc;
    }
  return y;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[static_cast<size_t>(i)], tol) << "element " << i;
}

struct Dims {
  std::vector<int64_t> x;
  int64_t n;
};
// Small M (1, 3 and 8 rows, odd N and K tails) and large M (M = 21 > kSmallMMaxRows).
const std::vector<Dims> kDims = {{{1, 1, 33}, 17}, {{3, 7}, 1}, {{8, 1003}, 40}, {{1, 1, 256}, 1027}, {{3, 7, 19}, 33}};

TEST(FusedLinearLowp, Float16WeightsEqualFloat32OnWidenedWeights) {
  for (const Dims& d : kDims) {
    SCOPED_TRACE(Shape(d.x).to_string() + " N=" + std::to_string(d.n));
    const int64_t K = d.x.back();
    const Tensor x = random_tensor(DType::kFloat32, d.x, 1), w16 = random_tensor(DType::kFloat16, {K, d.n}, 2, -1, 1);
    const Tensor b = random_tensor(DType::kFloat32, {d.n}, 3), w32 = widen_f16(w16);
    for (bool bias : {false, true}) {
      std::vector<Tensor> in16 = {x, w16}, in32 = {x, w32};
      if (bias) in16.push_back(b), in32.push_back(b);
      auto y16 = run_single(linear(in16, {attr_s("activation", "relu")}));
      auto y32 = run_single(linear(in32, {attr_s("activation", "relu")}));
      ASSERT_TRUE(y16.is_ok() && y32.is_ok()) << y16.status().to_string();
      EXPECT_TRUE(same_bits(*y16, *y32));
      expect_close(*y16, reference(x, w32, nullptr, bias ? &b : nullptr, true), 1e-6 * std::sqrt(double(K)) * 10);
    }
  }
}

TEST(FusedLinearLowp, Int8WeightsMatchScaledReference) {
  for (const Dims& d : kDims) {
    SCOPED_TRACE(Shape(d.x).to_string() + " N=" + std::to_string(d.n));
    const int64_t K = d.x.back();
    const Tensor x = random_tensor(DType::kFloat32, d.x, 4), q = random_int8({K, d.n}, 5);
    const Tensor s = random_tensor(DType::kFloat32, {d.n}, 6, 0.001f, 0.02f), b = random_tensor(DType::kFloat32, {d.n}, 7);
    const Tensor wq = widen_i8(q);
    auto y = run_single(linear({x, q, b, s}));
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    // |x| <= 3, |q| <= 127, s <= 0.02: float32 accumulation error well below 1e-5 * K.
    expect_close(*y, reference(x, wq, &s, &b, false), 1e-5 * double(K));
    auto no_bias = run_single(linear({x, q, Tensor(), s}, {attr_s("activation", "relu")}));
    ASSERT_TRUE(no_bias.is_ok()) << no_bias.status().to_string();
    expect_close(*no_bias, reference(x, wq, &s, nullptr, true), 1e-5 * double(K));
    // The same chain as float32 on the widened integers, then the scale, then the bias.
    const int64_t M = x.numel() / K;
    if (M <= 8 && d.n >= 8) {
      Tensor want = must_run("Add", {must_run("Mul", {run_single(linear({x, wq})).value(), s}), b});
      EXPECT_TRUE(same_bits(*y, want));
    }
  }
}

TEST(FusedLinearLowp, BoundFormAndThreadsGiveRunBits) {
  cpu::ThreadPool pool(2);
  for (const Dims& d : kDims) {
    SCOPED_TRACE(Shape(d.x).to_string() + " N=" + std::to_string(d.n));
    const int64_t K = d.x.back();
    const Tensor x = random_tensor(DType::kFloat32, d.x, 8), w16 = random_tensor(DType::kFloat16, {K, d.n}, 9, -1, 1);
    const Tensor q = random_int8({K, d.n}, 10), s = random_tensor(DType::kFloat32, {d.n}, 11, 0.001f, 0.02f);
    const Tensor b = random_tensor(DType::kFloat32, {d.n}, 12);
    const NodeSpec f16 = linear({x, w16, b}, {attr_s("activation", "gelu")});
    const NodeSpec i8 = linear({x, q, b, s}, {attr_s("activation", "silu")});
    expect_bound_matches(f16, {1, 2});
    expect_bound_matches(i8, {1, 2, 3});
    for (const NodeSpec& spec : {f16, i8}) {
      KernelUnderTest k = make_kernel(spec);
      ASSERT_NE(k.kernel, nullptr);
      std::vector<bool> constant(spec.inputs.size(), true);
      const Tensor ref = run_single(spec).value();
      std::vector<Tensor> out_inline = {fresh_tensor(DType::kFloat32, ref.shape(), 0)};
      std::vector<Tensor> out_pool = {fresh_tensor(DType::kFloat32, ref.shape(), 0)};
      auto a = k.kernel->prepare(TestPrepareContext(*k.node, spec.inputs, constant, out_inline));
      auto p = k.kernel->prepare(TestPrepareContext(*k.node, spec.inputs, constant, out_pool));
      ASSERT_TRUE(a.is_ok() && a.value() && p.is_ok() && p.value());
      ASSERT_TRUE(a.value()->run().is_ok());
      {
        cpu::ScopedThreadPool scope(&pool);
        ASSERT_TRUE(p.value()->run().is_ok());
      }
      EXPECT_TRUE(same_bits(out_inline[0], ref));
      EXPECT_TRUE(same_bits(out_pool[0], ref));
    }
  }
}

// x_quant "dynamic" / "int16": X quantized per row to qmax = 127 / 32767 (s_x = max |x| / qmax,
// q = round(x / s_x)), integer products, y = acc * (s_x * scale) + b. Against a reference applying the same
// quantization in double (the integer sums are exact; the float rounding of the result is the only
// difference), the bound form and the 2-thread pool bit for bit, and within the quantization error of
// the weight-only result. "int16" takes the integer path up to kSmallMMaxRows (8) rows only; beyond, it
// is the float path bit for bit.
std::vector<double> quantized_x_reference(const Tensor& x, const Tensor& q, const Tensor& s, const Tensor* b,
                                          float qmax) {
  const int64_t K = q.shape()[0], N = q.shape()[1], M = x.numel() / K;
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x.data<float>() + m * K;
    float amax = 0.f;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(xr[k]));
    const float sx = amax / qmax == 0.f ? 1.f : amax / qmax;
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<int64_t>(std::nearbyint(std::clamp(xr[k] / sx, -qmax, qmax))) * q.data<int8_t>()[k * N + n];
      double v = static_cast<double>(acc) * static_cast<double>(sx * s.data<float>()[n]);
      if (b) v += b->data<float>()[n];
      y[static_cast<size_t>(m * N + n)] = v;
    }
  }
  return y;
}

void expect_quantized_x(const char* mode, float qmax, unsigned seed) {
  cpu::ThreadPool pool(2);
  for (const Dims& d : kDims) {
    SCOPED_TRACE(std::string(mode) + " " + Shape(d.x).to_string() + " N=" + std::to_string(d.n));
    const int64_t K = d.x.back();
    const Tensor x = random_tensor(DType::kFloat32, d.x, seed), q = random_int8({K, d.n}, seed + 1);
    const Tensor s = random_tensor(DType::kFloat32, {d.n}, seed + 2, 0.001f, 0.02f);
    const Tensor b = random_tensor(DType::kFloat32, {d.n}, seed + 3);
    const NodeSpec spec = linear({x, q, b, s}, {attr_s("x_quant", mode)});
    auto y = run_single(spec);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const bool integer = qmax == 127.f || x.numel() / K <= 8;
    if (integer) {
      const std::vector<double> want = quantized_x_reference(x, q, s, &b, qmax);
      for (int64_t i = 0; i < y->numel(); ++i)
        ASSERT_NEAR(y->data<float>()[i], want[static_cast<size_t>(i)], 1e-6 * (std::fabs(want[static_cast<size_t>(i)]) + 1))
            << "element " << i;
    } else {
      EXPECT_TRUE(same_bits(*y, run_single(linear({x, q, b, s})).value()));
    }
    // Rounding X to qmax levels moves the result by at most ~ K * (s_x / 2) * 127 * scale from weight-only
    // (|x| < 3 here).
    expect_close(*y, reference(x, widen_i8(q), &s, &b, false), double(K) * (3.0 / (2 * qmax)) * 127 * 0.02 + 1e-4);
    expect_bound_matches(spec, {1, 2, 3});
    KernelUnderTest k = make_kernel(spec);
    std::vector<bool> constant(spec.inputs.size(), true);
    std::vector<Tensor> out_pool = {fresh_tensor(DType::kFloat32, y->shape(), 0)};
    auto p = k.kernel->prepare(TestPrepareContext(*k.node, spec.inputs, constant, out_pool));
    ASSERT_TRUE(p.is_ok() && p.value());
    {
      cpu::ScopedThreadPool scope(&pool);
      ASSERT_TRUE(p.value()->run().is_ok());
    }
    EXPECT_TRUE(same_bits(out_pool[0], *y));
  }
  // Only with an int8 W.
  const Tensor x = random_tensor(DType::kFloat32, {2, 4}, seed + 4);
  EXPECT_FALSE(run_single(linear({x, random_tensor(DType::kFloat16, {4, 3}, seed + 5)}, {attr_s("x_quant", mode)})).is_ok());
}

TEST(FusedLinearLowp, DynamicInt8QuantizesXPerRow) { expect_quantized_x("dynamic", 127.f, 20); }

TEST(FusedLinearLowp, Int16XRoundsXPerRowAtSmallM) { expect_quantized_x("int16", 32767.f, 30); }

TEST(FusedLinearLowp, UnknownXQuantIsAnError) {
  const Tensor x = random_tensor(DType::kFloat32, {2, 4}, 24);
  EXPECT_FALSE(run_single(linear({x, random_int8({4, 3}, 26), Tensor(), random_tensor(DType::kFloat32, {3}, 27, 0.01f, 0.02f)},
                                 {attr_s("x_quant", "per_tensor")}))
                   .is_ok());
}

TEST(FusedLinearLowp, BadWeightTypesAndScalesAreErrors) {
  const Tensor x = random_tensor(DType::kFloat32, {2, 4}, 13), q = random_int8({4, 3}, 14);
  const Tensor s = random_tensor(DType::kFloat32, {3}, 15, 0.01f, 0.02f);
  EXPECT_FALSE(run_single(linear({x, q})).is_ok());                                                  // int8, no scale
  EXPECT_FALSE(run_single(linear({x, q, Tensor(), random_tensor(DType::kFloat32, {4}, 16)})).is_ok());  // scale not [N]
  EXPECT_FALSE(run_single(linear({x, random_tensor(DType::kFloat32, {4, 3}, 17), Tensor(), s})).is_ok());  // f32 + scale
  EXPECT_FALSE(run_single(linear({random_tensor(DType::kFloat64, {2, 4}, 18), random_tensor(DType::kFloat16, {4, 3}, 19)}))
                   .is_ok());  // float16 W with float64 X
}

}  // namespace
}  // namespace sdx::test
