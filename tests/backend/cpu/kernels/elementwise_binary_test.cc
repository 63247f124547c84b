// Add/Sub/Mul/Div/Mod/Pow/PRelu through a session: broadcasting, integer
// semantics (C-style division, Python-style mod) and bad inputs.
#include <gtest/gtest.h>
#include <vector>
#include <limits>
#include <cstring>

#include <cmath>
#include <cstdint>
#include <string>

#include "kernel_test_util.h"

namespace sdx::test {
namespace {

// Pow(x, 2) for float32 is one product in double, the bits of pow(x, 2.0) rounded: every kind of
// value, infinities, NaN, signed zeros, subnormals, values whose square overflows float.
TEST(ElementwiseBinary, PowSquareIsPowBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.f, -0.f, 1.f, -1.5f, 3.0e-39f, -1e-30f, 1e19f, -2e30f, inf, -inf,
                          std::numeric_limits<float>::quiet_NaN(), 123.456f, -7.25e-3f};
  for (int i = 0; i < 200; ++i) x.push_back(std::ldexp(static_cast<float>(i % 17) - 8.3f, i % 80 - 40));
  const int64_t n = static_cast<int64_t>(x.size());
  auto y = run_node("Pow", {f32(x, {n}), f32({2.f}, {})}, {}, 15);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  for (int64_t i = 0; i < n; ++i) {
    const double p = std::pow(static_cast<double>(x[static_cast<size_t>(i)]), 2.0);
    const float want = p > std::numeric_limits<float>::max() ? inf : static_cast<float>(p);  // rounding overflows
    const float got = (*y)[0].data<float>()[i];
    if (std::isnan(p)) EXPECT_TRUE(std::isnan(got)) << i;
    else EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << i << ": " << got << " vs " << want;
  }
}

TEST(ElementwiseBinary, AddBroadcastsRow) {
  auto y = run_single("Add", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({10, 20, 30}, {3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseBinary, IntegerDivTruncatesAndModFollowsDivisorSign) {
  auto d = run_single("Div", {i32({7, -7, 7, -7}, {4}), i32({2, 2, -2, -2}, {4})});
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(values<int32_t>(*d), (std::vector<int32_t>{3, -3, -3, 3}));
  auto m = run_single("Mod", {i32({7, -7, 7, -7}, {4}), i32({3, 3, -3, -3}, {4})});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(values<int32_t>(*m), (std::vector<int32_t>{1, 2, -2, -1}));
  auto f = run_single("Mod", {i32({7, -7}, {2}), i32({3, 3}, {2})}, {attr_i("fmod", 1)});
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(values<int32_t>(*f), (std::vector<int32_t>{1, -1}));
}

// Integer x / 0, MIN / -1 and x mod 0 fail the run with an error naming the node and the problem
// (never a trap, never a made-up value); MIN mod -1 is 0. Every integer type, a divisor broadcast from
// one element, and the faulting element anywhere in the row (each vector lane and the tail).
TEST(ElementwiseBinary, IntegerDivisionFaultsAreErrors) {
  auto d = run_single("Div", {i32({5, 6, 7}, {3}), i32({1, 0, 2}, {3})});
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("node 'Div0' (Div)"), std::string::npos) << d.status().to_string();
  EXPECT_NE(d.status().message().find("integer division by zero (int32)"), std::string::npos) << d.status().to_string();

  auto o = run_single("Div", {i32({INT32_MIN, 4}, {2}), i32({-1, -1}, {2})});
  ASSERT_FALSE(o.is_ok());
  EXPECT_NE(o.status().message().find("integer division overflow: MIN / -1 does not fit in int32"), std::string::npos)
      << o.status().to_string();
  auto o64 = run_single("Div", {i64({INT64_MIN}, {1}), i64({-1}, {})});
  ASSERT_FALSE(o64.is_ok());
  EXPECT_NE(o64.status().message().find("int64"), std::string::npos) << o64.status().to_string();

  auto m = run_single("Mod", {i32({5, 6}, {2}), i32({0}, {})});
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("node 'Mod0' (Mod): integer modulo by zero (int32)"), std::string::npos)
      << m.status().to_string();
  auto mf = run_single("Mod", {i32({5}, {1}), i32({0}, {1})}, {attr_i("fmod", 1)});
  ASSERT_FALSE(mf.is_ok());

  // MIN mod -1 is 0 (the remainder fits); MIN / 1 and -MIN-ish quotients that fit are fine.
  auto ok = run_single("Mod", {i32({INT32_MIN, 7}, {2}), i32({-1, -1}, {2})});
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(values<int32_t>(*ok), (std::vector<int32_t>{0, 0}));
  auto fits = run_single("Div", {i32({INT32_MIN, INT32_MIN + 1}, {2}), i32({1, -1}, {2})});
  ASSERT_TRUE(fits.is_ok()) << fits.status().to_string();
  EXPECT_EQ(values<int32_t>(*fits), (std::vector<int32_t>{INT32_MIN, INT32_MAX}));

  // Other integer types, the zero at every position of a 37-element row.
  for (DType dt : {DType::kInt8, DType::kInt16, DType::kInt64, DType::kUint8, DType::kUint16, DType::kUint32,
                   DType::kUint64}) {
    for (int64_t p : {0, 1, 7, 15, 16, 31, 36}) {
      std::vector<int64_t> a(37, 9), b(37, 3);
      b[static_cast<size_t>(p)] = 0;
      auto tensor = [&](const std::vector<int64_t>& v) {
        Tensor t = Tensor::allocate(dt, Shape({37})).value();
        for (int64_t i = 0; i < 37; ++i) {
          const int64_t e = v[static_cast<size_t>(i)];
          switch (dt) {
            case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(e); break;
            case DType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(e); break;
            case DType::kInt64: t.data<int64_t>()[i] = e; break;
            case DType::kUint8: t.data<uint8_t>()[i] = static_cast<uint8_t>(e); break;
            case DType::kUint16: t.data<uint16_t>()[i] = static_cast<uint16_t>(e); break;
            case DType::kUint32: t.data<uint32_t>()[i] = static_cast<uint32_t>(e); break;
            default: t.data<uint64_t>()[i] = static_cast<uint64_t>(e); break;
          }
        }
        return t;
      };
      for (const char* op : {"Div", "Mod"}) {
        auto r = run_single(op, {tensor(a), tensor(b)});
        ASSERT_FALSE(r.is_ok()) << op << " " << dtype_name(dt) << " zero at " << p;
        EXPECT_NE(r.status().message().find(std::string("by zero (") + dtype_name(dt) + ")"), std::string::npos)
            << r.status().to_string();
      }
    }
  }
  auto i8 = run_single("Div", {make(DType::kInt8, std::vector<int8_t>{-128}, {1}),
                               make(DType::kInt8, std::vector<int8_t>{-1}, {1})});
  ASSERT_FALSE(i8.is_ok());
  EXPECT_NE(i8.status().message().find("does not fit in int8"), std::string::npos) << i8.status().to_string();
}

// Float division by zero is IEEE (no error): +-inf, NaN for 0 / 0.
TEST(ElementwiseBinary, FloatDivisionByZeroIsIeee) {
  auto d = run_single("Div", {f32({1, -1, 0}, {3}), f32({0, 0, 0}, {3})});
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  const std::vector<float> v = values<float>(*d);
  EXPECT_EQ(v[0], INFINITY);
  EXPECT_EQ(v[1], -INFINITY);
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST(ElementwiseBinary, PowMixedTypes) {
  auto y = run_single("Pow", {f32({2, 3}, {2}), i64({3, 2}, {2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{8, 9}));
  auto z = run_single("Pow", {i64({2, -3}, {2}), i64({10, 3}, {2})});
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  EXPECT_EQ(values<int64_t>(*z), (std::vector<int64_t>{1024, -27}));
}

TEST(ElementwiseBinary, PReluSlopePerChannel) {
  auto y = run_single("PRelu", {f32({-2, 3, -4, 5}, {2, 2}), f32({0.5f, 0.25f}, {2})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{-1, 3, -2, 5}));
}

// PRelu as the ONNX reference computes it (np.where(x > 0, x, x * slope)): NaN from x or the slope.
TEST(ElementwiseBinary, PReluPropagatesNaN) {
  auto y = run_single("PRelu", {f32({NAN, -1, 0, 2, -INFINITY}, {5}), f32({0.5f, NAN, INFINITY, NAN, 0.f}, {5})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const std::vector<float> v = values<float>(*y);
  EXPECT_TRUE(std::isnan(v[0]));  // NaN x
  EXPECT_TRUE(std::isnan(v[1]));  // -1 * NaN
  EXPECT_TRUE(std::isnan(v[2]));  // 0 * inf
  EXPECT_EQ(v[3], 2.f);           // x > 0 keeps x whatever the slope
  EXPECT_TRUE(std::isnan(v[4]));  // -inf * 0
}

TEST(ElementwiseBinary, LegacyBroadcastAlongAxis) {
  // Opset 6: B [2] aligned with A [2, 3] at axis 0 (numpy would fail).
  auto y = run_single("Add", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({10, 20}, {2})},
                      {attr_i("broadcast", 1), attr_i("axis", 0)}, 6);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{11, 12, 13, 24, 25, 26}));
}

TEST(ElementwiseBinary, IncompatibleShapesAreAnError) {
  auto y = run_single("Mul", {f32({1, 2, 3}, {3}), f32({1, 2}, {2})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("cannot be broadcast"), std::string::npos) << y.status().message();
}

TEST(ElementwiseBinary, MixedElementTypesAreAnError) {
  auto y = run_single("Sub", {f32({1}, {1}), i32({1}, {1})});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("element type"), std::string::npos) << y.status().message();
}

TEST(ElementwiseBinary, BadModAttributeFailsAtLoad) {
  auto y = run_single("Mod", {i32({1}, {1}), i32({1}, {1})}, {attr_i("fmod", 2)});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("fmod"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace sdx::test
