// Tests for src/backend/cpu/kernels/ml_tree_ensemble.cc (TreeEnsemble, ai.onnx.ml opset 5).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace sdx {
namespace {

// Runs one ai.onnx.ml node on 1-D/2-D inputs through a real session (self-contained helper).
ir::Attribute attr(const std::string& name, ir::AttrType type) {
  ir::Attribute a;
  a.name = name;
  a.type = type;
  return a;
}

template <typename T>
Tensor make(DType dt, std::vector<T> v, std::vector<int64_t> dims) {
  auto t = Tensor::allocate(dt, Shape(dims));
  EXPECT_TRUE(t.is_ok());
  Tensor out = std::move(t).value();
  for (size_t i = 0; i < v.size(); ++i) out.data<T>()[i] = v[i];
  return out;
}

Result<Tensor> run_ml(const std::string& op, int opset, const std::vector<Tensor>& inputs,
                      const std::vector<ir::Attribute>& attrs) {
  ir::Model m;
  m.opsets[""] = 21;
  m.opsets["ai.onnx.ml"] = opset;
  m.graph = std::make_shared<ir::Graph>("g");
  std::vector<ir::Value*> ins;
  std::vector<std::pair<std::string, Datum>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<ir::Dim> dims;
    for (int64_t d : inputs[i].shape().dims()) dims.push_back(ir::Dim::fixed(d));
    const std::string name = "x" + std::to_string(i);
    ins.push_back(m.graph->add_input(name, ir::TypeInfo::tensor(inputs[i].dtype(), dims)));
    feeds.push_back({name, Datum::tensor(inputs[i])});
  }
  ir::Node* n = m.graph->add_node(op, "ai.onnx.ml", "n0", ins, {"y"});
  n->set_opset(opset);
  for (const auto& a : attrs) n->add_attribute(a);
  m.graph->add_output(n->output(0));
  SDX_ASSIGN_OR_RETURN(auto s, runtime::Session::create(std::move(m)), "");
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs, s->run(feeds), "");
  return outs.at(0).as_tensor();
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

ir::Attribute ints(const std::string& name, std::vector<int64_t> v) {
  auto a = attr(name, ir::AttrType::kInts);
  a.ints = std::move(v);
  return a;
}
ir::Attribute ival(const std::string& name, int64_t v) {
  auto a = attr(name, ir::AttrType::kInt);
  a.i = v;
  return a;
}
ir::Attribute tensor(const std::string& name, Tensor t) {
  auto a = attr(name, ir::AttrType::kTensor);
  a.t = std::move(t);
  return a;
}

// One tree: node0 x0 <= 1 ? node1 : leaf2; node1 x1 < 0 ? leaf0 : leaf1. Plus a single-leaf tree.
std::vector<ir::Attribute> two_trees(int64_t aggregate) {
  return {ival("n_targets", 2),
          ival("aggregate_function", aggregate),
          ints("tree_roots", {0, 2}),
          ints("nodes_featureids", {0, 1, 0}),
          tensor("nodes_modes", make<uint8_t>(DType::kUint8, {0, 1, 0}, {3})),
          tensor("nodes_splits", make<float>(DType::kFloat32, {1.f, 0.f, 0.f}, {3})),
          ints("nodes_truenodeids", {1, 0, 3}),
          ints("nodes_trueleafs", {0, 1, 1}),
          ints("nodes_falsenodeids", {2, 1, 3}),
          ints("nodes_falseleafs", {1, 1, 1}),
          ints("leaf_targetids", {0, 1, 0, 1}),
          tensor("leaf_weights", make<float>(DType::kFloat32, {10.f, 20.f, 30.f, 0.5f}, {4}))};
}

TEST(MlTreeEnsemble, SumOverTrees) {
  Tensor x = make<float>(DType::kFloat32, {0.f, -1.f, 0.f, 1.f, 5.f, 0.f}, {3, 2});
  auto y = run_ml("TreeEnsemble", 5, {x}, two_trees(/*SUM=*/1));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{10.f, 0.5f, 0.f, 20.5f, 30.f, 0.5f}));
}

TEST(MlTreeEnsemble, AverageDividesByTreeCount) {
  Tensor x = make<double>(DType::kFloat64, {0.0, -1.0}, {1, 2});
  auto y = run_ml("TreeEnsemble", 5, {x}, two_trees(/*AVERAGE=*/0));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<double>(*y), (std::vector<double>{5.0, 0.25}));
}

TEST(MlTreeEnsemble, TooFewFeaturesIsAnError) {
  Tensor x = make<float>(DType::kFloat32, {0.f}, {1, 1});
  auto y = run_ml("TreeEnsemble", 5, {x}, two_trees(1));
  EXPECT_FALSE(y.is_ok());
}

TEST(MlTreeEnsemble, BadReferencesAndCyclesAreRejected) {
  auto attrs = two_trees(1);
  attrs[8] = ints("nodes_falsenodeids", {2, 1, 9});  // leaf 9 does not exist
  EXPECT_FALSE(run_ml("TreeEnsemble", 5, {make<float>(DType::kFloat32, {0.f, 0.f}, {1, 2})}, attrs).is_ok());
  attrs = two_trees(1);
  attrs[6] = ints("nodes_truenodeids", {1, 0, 3});
  attrs[7] = ints("nodes_trueleafs", {0, 0, 1});  // node1 -> node0: a cycle
  EXPECT_FALSE(run_ml("TreeEnsemble", 5, {make<float>(DType::kFloat32, {0.f, 0.f}, {1, 2})}, attrs).is_ok());
}

}  // namespace
}  // namespace sdx
