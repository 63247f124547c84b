// Tests for src/backend/cpu/kernels/ml_label_encoder.cc (LabelEncoder, ai.onnx.ml).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace sdx::test;

TEST(MlLabelEncoder, StringsToIntsWithDefault) {
  auto k = attr_strings("keys_strings", {"a", "b", "c"});
  auto v = attr_ints("values_int64s", {0, 1, 2});
  auto d = attr_i("default_int64", 42);
  auto y = run_single({.op = "LabelEncoder",
                       .domain = "ai.onnx.ml",
                       .opset = 4,
                       .inputs = {make<std::string>(DType::kString, {"a", "b", "d", "c"}, {4})},
                       .attrs = {k, v, d}});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>(*y), (std::vector<int64_t>{0, 1, 42, 2}));
}

TEST(MlLabelEncoder, FloatKeysMatchNanAndLastKeyWins) {
  auto k = attr_floats("keys_floats", {1.5f, NAN, 1.5f});
  auto v = attr_strings("values_strings", {"first", "nan", "last"});
  auto y = run_single({.op = "LabelEncoder",
                       .domain = "ai.onnx.ml",
                       .opset = 2,
                       .inputs = {make<float>(DType::kFloat32, {1.5f, NAN, 7.f}, {3})},
                       .attrs = {k, v}});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<std::string>(*y), (std::vector<std::string>{"last", "nan", "_Unused"}));
}

TEST(MlLabelEncoder, TensorKeysAndValues) {
  auto k = attr_t("keys_tensor", make<int32_t>(DType::kInt32, {3, 5}, {2}));
  auto v = attr_t("values_tensor", make<double>(DType::kFloat64, {0.25, 0.5}, {2}));
  auto y = run_single({.op = "LabelEncoder",
                       .domain = "ai.onnx.ml",
                       .opset = 4,
                       .inputs = {make<int32_t>(DType::kInt32, {5, 3, 4}, {3})},
                       .attrs = {k, v}});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto out = values<double>(*y);
  EXPECT_EQ(out[0], 0.5);
  EXPECT_EQ(out[1], 0.25);
  EXPECT_EQ(out[2], 0.0);
}

TEST(MlLabelEncoder, MismatchedLengthsAndTypesAreErrors) {
  auto k = attr_strings("keys_strings", {"a", "b"});
  auto v = attr_ints("values_int64s", {0});
  EXPECT_FALSE(run_single({.op = "LabelEncoder",
                           .domain = "ai.onnx.ml",
                           .opset = 4,
                           .inputs = {make<std::string>(DType::kString, {"a"}, {1})},
                           .attrs = {k, v}})
                   .is_ok());
  v.ints = {0, 1};
  // Input type differs from the key type.
  EXPECT_FALSE(run_single({.op = "LabelEncoder",
                           .domain = "ai.onnx.ml",
                           .opset = 4,
                           .inputs = {make<int64_t>(DType::kInt64, {1}, {1})},
                           .attrs = {k, v}})
                   .is_ok());
}

}  // namespace
}  // namespace sdx
