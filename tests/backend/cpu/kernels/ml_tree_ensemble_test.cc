// Tests for src/backend/cpu/kernels/ml_tree_ensemble.cc (TreeEnsemble, ai.onnx.ml opset 5).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace sdx {
namespace {

using namespace sdx::test;

// One tree: node0 x0 <= 1 ? node1 : leaf2; node1 x1 < 0 ? leaf0 : leaf1. Plus a single-leaf tree.
std::vector<ir::Attribute> two_trees(int64_t aggregate) {
  return {attr_i("n_targets", 2),
          attr_i("aggregate_function", aggregate),
          attr_ints("tree_roots", {0, 2}),
          attr_ints("nodes_featureids", {0, 1, 0}),
          attr_t("nodes_modes", make<uint8_t>(DType::kUint8, {0, 1, 0}, {3})),
          attr_t("nodes_splits", make<float>(DType::kFloat32, {1.f, 0.f, 0.f}, {3})),
          attr_ints("nodes_truenodeids", {1, 0, 3}),
          attr_ints("nodes_trueleafs", {0, 1, 1}),
          attr_ints("nodes_falsenodeids", {2, 1, 3}),
          attr_ints("nodes_falseleafs", {1, 1, 1}),
          attr_ints("leaf_targetids", {0, 1, 0, 1}),
          attr_t("leaf_weights", make<float>(DType::kFloat32, {10.f, 20.f, 30.f, 0.5f}, {4}))};
}

TEST(MlTreeEnsemble, SumOverTrees) {
  Tensor x = make<float>(DType::kFloat32, {0.f, -1.f, 0.f, 1.f, 5.f, 0.f}, {3, 2});
  auto y = run_single(
      {.op = "TreeEnsemble", .domain = "ai.onnx.ml", .opset = 5, .inputs = {x}, .attrs = two_trees(/*SUM=*/1)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{10.f, 0.5f, 0.f, 20.5f, 30.f, 0.5f}));
}

TEST(MlTreeEnsemble, AverageDividesByTreeCount) {
  Tensor x = make<double>(DType::kFloat64, {0.0, -1.0}, {1, 2});
  auto y = run_single(
      {.op = "TreeEnsemble", .domain = "ai.onnx.ml", .opset = 5, .inputs = {x}, .attrs = two_trees(/*AVERAGE=*/0)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<double>(*y), (std::vector<double>{5.0, 0.25}));
}

TEST(MlTreeEnsemble, TooFewFeaturesIsAnError) {
  Tensor x = make<float>(DType::kFloat32, {0.f}, {1, 1});
  auto y = run_single({.op = "TreeEnsemble", .domain = "ai.onnx.ml", .opset = 5, .inputs = {x}, .attrs = two_trees(1)});
  EXPECT_FALSE(y.is_ok());
}

TEST(MlTreeEnsemble, BadReferencesAndCyclesAreRejected) {
  auto attrs = two_trees(1);
  attrs[8] = attr_ints("nodes_falsenodeids", {2, 1, 9});  // leaf 9 does not exist
  EXPECT_FALSE(run_single({.op = "TreeEnsemble",
                           .domain = "ai.onnx.ml",
                           .opset = 5,
                           .inputs = {make<float>(DType::kFloat32, {0.f, 0.f}, {1, 2})},
                           .attrs = attrs})
                   .is_ok());
  attrs = two_trees(1);
  attrs[6] = attr_ints("nodes_truenodeids", {1, 0, 3});
  attrs[7] = attr_ints("nodes_trueleafs", {0, 0, 1});  // node1 -> node0: a cycle
  EXPECT_FALSE(run_single({.op = "TreeEnsemble",
                           .domain = "ai.onnx.ml",
                           .opset = 5,
                           .inputs = {make<float>(DType::kFloat32, {0.f, 0.f}, {1, 2})},
                           .attrs = attrs})
                   .is_ok());
}

}  // namespace
}  // namespace sdx
