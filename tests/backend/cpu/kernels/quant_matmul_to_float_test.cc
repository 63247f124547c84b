// com.microsoft.MatMulIntegerToFloat (src/backend/cpu/kernels/quant_matmul_to_float.cc): bit for bit the
// exact integer sum rounded to float, times fl(a_scale * b_scale[n]), plus bias, on the oneDNN path (uint8 A,
// int8 B with zero points 0, products of at least 2^20 multiply-adds; VNNI on this machine) and on the
// portable loop (small products, int8 A, nonzero B zero points, uint8 B); odd M, K, N; per-tensor and
// per-column scales; the bound form and run() alike, on one thread and two; and errors by name.
#include <random>

#include "backend/cpu/threading/thread_pool.h"
#include "fused_test_util.h"

namespace sdx::test {
namespace {

Tensor random_bytes(DType dt, const std::vector<int64_t>& dims, unsigned seed) {
  std::mt19937 gen(seed);
  Tensor t = Tensor::allocate(dt, Shape(dims)).value();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int v = static_cast<int>(gen() % 256);
    if (dt == DType::kUint8) t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    else t.data<int8_t>()[i] = static_cast<int8_t>(v - 128);
  }
  return t;
}

int32_t at(const Tensor& t, int64_t i) { return t.dtype() == DType::kUint8 ? t.data<uint8_t>()[i] : t.data<int8_t>()[i]; }

// The op's definition computed the plain way: int64 sums, one rounding to float, the scale product, bias.
Tensor reference(const Tensor& a, const Tensor& b, const Tensor& as, const Tensor& bs, const Tensor* az,
                 const Tensor* bz, const Tensor* bias) {
  const int64_t K = b.shape()[0], N = b.shape()[1], M = a.numel() / K;
  std::vector<int64_t> dims = a.shape().dims();
  dims.back() = N;
  Tensor y = Tensor::allocate(DType::kFloat32, Shape(dims)).value();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      const int32_t zb = bz ? at(*bz, bz->numel() == 1 ? 0 : n) : 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t(at(a, m * K + k) - (az ? at(*az, 0) : 0)) * (at(b, k * N + n) - zb);
      const float scale = as.data<float>()[0] * bs.data<float>()[bs.numel() == 1 ? 0 : n];
      float v = static_cast<float>(acc) * scale;
      if (bias) v += bias->data<float>()[n];
      y.data<float>()[m * N + n] = v;
    }
  return y;
}

NodeSpec spec(std::vector<Tensor> in) {
  return NodeSpec{.op = "MatMulIntegerToFloat", .domain = "com.microsoft", .opset = 1, .inputs = std::move(in)};
}

struct Case {
  std::vector<int64_t> a;
  int64_t n;
  DType at, bt;
  bool per_column, b_zero_point, bias;
  bool onednn;  // expected to take the oneDNN path (documentation of the case; results are the same)
};

TEST(MatMulIntegerToFloat, EveryPathGivesTheExactSumRoundedOnce) {
  const std::vector<Case> cases = {
      {{64, 128}, 128, DType::kUint8, DType::kInt8, true, false, true, true},
      {{2, 97, 383}, 131, DType::kUint8, DType::kInt8, true, false, true, true},
      {{400, 384}, 384, DType::kUint8, DType::kInt8, false, false, false, true},
      {{7, 33}, 17, DType::kUint8, DType::kInt8, true, false, true, false},       // small
      {{65, 300}, 70, DType::kInt8, DType::kInt8, true, false, true, false},      // int8 A
      {{64, 256}, 96, DType::kUint8, DType::kInt8, true, true, false, false},     // B zero points
      {{40, 129}, 300, DType::kUint8, DType::kUint8, false, true, true, false},   // uint8 B
      {{1, 1, 5}, 3, DType::kUint8, DType::kInt8, false, false, false, false},
  };
  cpu::ThreadPool pool(2);
  unsigned seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(Shape(c.a).to_string() + " N=" + std::to_string(c.n) + (c.onednn ? " (oneDNN)" : " (portable)"));
    const int64_t K = c.a.back();
    const Tensor a = random_bytes(c.at, c.a, seed++), b = random_bytes(c.bt, {K, c.n}, seed++);
    const Tensor as = random_tensor(DType::kFloat32, {}, seed++, 0.001f, 0.05f);
    const Tensor bs = random_tensor(DType::kFloat32, c.per_column ? std::vector<int64_t>{c.n} : std::vector<int64_t>{},
                                    seed++, 0.001f, 0.05f);
    const Tensor az = make<uint8_t>(DType::kUint8, {131}, {});
    const Tensor az8 = make<int8_t>(DType::kInt8, {-3}, {});
    const Tensor bz = random_bytes(c.bt, {c.n}, seed++);
    const Tensor bias = random_tensor(DType::kFloat32, {c.n}, seed++);
    const Tensor& a_zp = c.at == DType::kUint8 ? az : az8;
    std::vector<Tensor> in = {a, b, as, bs, a_zp, c.b_zero_point ? bz : Tensor(), c.bias ? bias : Tensor()};
    const Tensor want = reference(a, b, as, bs, &a_zp, c.b_zero_point ? &bz : nullptr, c.bias ? &bias : nullptr);
    auto got = run_single(spec(in));
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_TRUE(same_bits(*got, want));
    {
      cpu::ScopedThreadPool scope(&pool);
      auto two = run_single(spec(in));
      ASSERT_TRUE(two.is_ok());
      EXPECT_TRUE(same_bits(*two, want));
    }
    // The bound form: everything but A constant; oneDNN's execute may allocate inside the library.
    expect_bound_matches(spec(in), {1, 2, 3, 4, 5, 6}, c.onednn ? HeapCheck::kLibraryMayAllocate : HeapCheck::kNone);
  }
}

TEST(MatMulIntegerToFloat, BadInputsAreErrorsByName) {
  const Tensor a = random_bytes(DType::kUint8, {4, 8}, 1), b = random_bytes(DType::kInt8, {8, 5}, 2);
  const Tensor s = f32({0.1f}, {});
  auto fails = [&](std::vector<Tensor> in, const std::string& text) {
    auto r = run_single(spec(std::move(in)));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
  };
  fails({a, random_bytes(DType::kInt8, {2, 8, 5}, 3), s, s}, "no batched B");
  fails({a, random_bytes(DType::kInt8, {7, 5}, 3), s, s}, "inner dimensions");
  fails({a, b, f32({0.1f, 0.2f}, {2}), s}, "a_scale must hold one value");
  fails({a, b, s, f32({0.1f, 0.2f}, {2})}, "b_scale must hold one value or one per column");
  fails({a, b, s, s, make<int8_t>(DType::kInt8, {1}, {})}, "a_zero_point must be one value of A's type");
  fails({a, b, s, s, Tensor(), Tensor(), f32({1.f}, {1})}, "bias must be float32 [5]");
  fails({f32({1.f}, {1, 1}), b, s, s}, "must be uint8 or int8");
}

}  // namespace
}  // namespace sdx::test
