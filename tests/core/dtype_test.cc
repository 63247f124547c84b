#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/float16.h"

namespace sdx {
namespace {

TEST(DType, OnnxCodesRoundTrip) {
  for (int code = 1; code < kNumDTypes; ++code) {
    auto t = dtype_from_onnx(code);
    ASSERT_TRUE(t.has_value()) << code;
    EXPECT_EQ(dtype_to_onnx(*t), code);
    EXPECT_EQ(dtype_from_name(dtype_name(*t)), t);
  }
  EXPECT_FALSE(dtype_from_onnx(0).has_value());
  EXPECT_FALSE(dtype_from_onnx(999).has_value());
}

TEST(DType, StorageBytes) {
  EXPECT_EQ(dtype_storage_bytes(DType::kFloat32, 10), 40u);
  EXPECT_EQ(dtype_storage_bytes(DType::kInt4, 3), 2u);
  EXPECT_EQ(dtype_storage_bytes(DType::kInt2, 5), 2u);
  EXPECT_EQ(dtype_storage_bytes(DType::kBool, 3), 3u);
  EXPECT_TRUE(dtype_is_float(DType::kBFloat16));
  EXPECT_TRUE(dtype_is_signed_int(DType::kInt4));
  EXPECT_FALSE(dtype_is_byte_addressable(DType::kUint4));
}

TEST(Float16, RoundTripsAndRounds) {
  for (float f : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f}) EXPECT_EQ(Float16::from_float(f).to_float(), f);
  EXPECT_TRUE(std::isinf(Float16::from_float(1e6f).to_float()));
  EXPECT_TRUE(std::isnan(Float16::from_float(NAN).to_float()));
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: rounds to even (1).
  EXPECT_EQ(Float16::from_float(1.f + 1.f / 2048).to_float(), 1.f);
  EXPECT_EQ(BFloat16::from_float(1.5f).to_float(), 1.5f);
  EXPECT_TRUE(std::isnan(BFloat16::from_float(NAN).to_float()));
}

}  // namespace
}  // namespace sdx
