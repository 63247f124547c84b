// Tests for src/backend/cpu/kernels/ml_features.cc (ArrayFeatureExtractor, Binarizer).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace sdx::test;

TEST(MlFeatures, ArrayFeatureExtractorSelectsColumns) {
  Tensor x = make<float>(DType::kFloat32, {0, 1, 2, 3, 4, 5}, {2, 3});
  auto y = run_single({.op = "ArrayFeatureExtractor",
                       .domain = "ai.onnx.ml",
                       .opset = 1,
                       .inputs = {x, make<int64_t>(DType::kInt64, {2, 0}, {2})}});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{2, 0, 5, 3}));
}

TEST(MlFeatures, ArrayFeatureExtractorOneDimIsOneRow) {
  Tensor x = make<std::string>(DType::kString, {"a", "b", "c"}, {3});
  auto y = run_single({.op = "ArrayFeatureExtractor",
                       .domain = "ai.onnx.ml",
                       .opset = 1,
                       .inputs = {x, make<int64_t>(DType::kInt64, {1}, {1})}});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{1, 1}));
  EXPECT_EQ(values<std::string>(*y), (std::vector<std::string>{"b"}));
}

TEST(MlFeatures, ArrayFeatureExtractorRejectsOutOfRangeIndex) {
  Tensor x = make<float>(DType::kFloat32, {0, 1, 2}, {1, 3});
  EXPECT_FALSE(run_single({.op = "ArrayFeatureExtractor",
                           .domain = "ai.onnx.ml",
                           .opset = 1,
                           .inputs = {x, make<int64_t>(DType::kInt64, {3}, {1})}})
                   .is_ok());
  EXPECT_FALSE(run_single({.op = "ArrayFeatureExtractor",
                           .domain = "ai.onnx.ml",
                           .opset = 1,
                           .inputs = {x, make<int64_t>(DType::kInt64, {-1}, {1})}})
                   .is_ok());
}

TEST(MlFeatures, BinarizerThreshold) {
  auto t = attr_f("threshold", 1.0f);
  auto y = run_single({.op = "Binarizer",
                       .domain = "ai.onnx.ml",
                       .opset = 1,
                       .inputs = {make<float>(DType::kFloat32, {0.5f, 1.0f, 1.5f, -3.f}, {4})},
                       .attrs = {t}});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{0, 0, 1, 0}));
  auto yi = run_single({.op = "Binarizer",
                        .domain = "ai.onnx.ml",
                        .opset = 1,
                        .inputs = {make<int64_t>(DType::kInt64, {0, 1, 2}, {3})},
                        .attrs = {t}});
  ASSERT_TRUE(yi.is_ok()) << yi.status().to_string();
  EXPECT_EQ(values<int64_t>(*yi), (std::vector<int64_t>{0, 0, 1}));
}

TEST(MlFeatures, BinarizerRejectsStrings) {
  EXPECT_FALSE(run_single({.op = "Binarizer",
                           .domain = "ai.onnx.ml",
                           .opset = 1,
                           .inputs = {make<std::string>(DType::kString, {"x"}, {1})}})
                   .is_ok());
}

}  // namespace
}  // namespace sdx
