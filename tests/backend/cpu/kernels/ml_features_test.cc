// Tests for src/backend/cpu/kernels/ml_features.cc (ArrayFeatureExtractor, Binarizer).
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

TEST(MlFeatures, ArrayFeatureExtractorSelectsColumns) {
  Tensor x = make<float>(DType::kFloat32, {0, 1, 2, 3, 4, 5}, {2, 3});
  auto y = run_ml("ArrayFeatureExtractor", 1, {x, make<int64_t>(DType::kInt64, {2, 0}, {2})}, {});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(*y), (std::vector<float>{2, 0, 5, 3}));
}

TEST(MlFeatures, ArrayFeatureExtractorOneDimIsOneRow) {
  Tensor x = make<std::string>(DType::kString, {"a", "b", "c"}, {3});
  auto y = run_ml("ArrayFeatureExtractor", 1, {x, make<int64_t>(DType::kInt64, {1}, {1})}, {});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{1, 1}));
  EXPECT_EQ(values<std::string>(*y), (std::vector<std::string>{"b"}));
}

TEST(MlFeatures, ArrayFeatureExtractorRejectsOutOfRangeIndex) {
  Tensor x = make<float>(DType::kFloat32, {0, 1, 2}, {1, 3});
  EXPECT_FALSE(run_ml("ArrayFeatureExtractor", 1, {x, make<int64_t>(DType::kInt64, {3}, {1})}, {}).is_ok());
  EXPECT_FALSE(run_ml("ArrayFeatureExtractor", 1, {x, make<int64_t>(DType::kInt64, {-1}, {1})}, {}).is_ok());
}

TEST(MlFeatures, BinarizerThreshold) {
  auto t = attr("threshold", ir::AttrType::kFloat);
  t.f = 1.0f;
  auto y = run_ml("Binarizer", 1, {make<float>(DType::kFloat32, {0.5f, 1.0f, 1.5f, -3.f}, {4})}, {t});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<float>(*y), (std::vector<float>{0, 0, 1, 0}));
  auto yi = run_ml("Binarizer", 1, {make<int64_t>(DType::kInt64, {0, 1, 2}, {3})}, {t});
  ASSERT_TRUE(yi.is_ok()) << yi.status().to_string();
  EXPECT_EQ(values<int64_t>(*yi), (std::vector<int64_t>{0, 0, 1}));
}

TEST(MlFeatures, BinarizerRejectsStrings) {
  EXPECT_FALSE(run_ml("Binarizer", 1, {make<std::string>(DType::kString, {"x"}, {1})}, {}).is_ok());
}

}  // namespace
}  // namespace sdx
