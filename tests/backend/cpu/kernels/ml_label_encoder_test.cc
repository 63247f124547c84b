// Tests for src/backend/cpu/kernels/ml_label_encoder.cc (LabelEncoder, ai.onnx.ml).
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

TEST(MlLabelEncoder, StringsToIntsWithDefault) {
  auto k = attr("keys_strings", ir::AttrType::kStrings);
  k.strings = {"a", "b", "c"};
  auto v = attr("values_int64s", ir::AttrType::kInts);
  v.ints = {0, 1, 2};
  auto d = attr("default_int64", ir::AttrType::kInt);
  d.i = 42;
  auto y = run_ml("LabelEncoder", 4, {make<std::string>(DType::kString, {"a", "b", "d", "c"}, {4})}, {k, v, d});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<int64_t>(*y), (std::vector<int64_t>{0, 1, 42, 2}));
}

TEST(MlLabelEncoder, FloatKeysMatchNanAndLastKeyWins) {
  auto k = attr("keys_floats", ir::AttrType::kFloats);
  k.floats = {1.5f, NAN, 1.5f};
  auto v = attr("values_strings", ir::AttrType::kStrings);
  v.strings = {"first", "nan", "last"};
  auto y = run_ml("LabelEncoder", 2, {make<float>(DType::kFloat32, {1.5f, NAN, 7.f}, {3})}, {k, v});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values<std::string>(*y), (std::vector<std::string>{"last", "nan", "_Unused"}));
}

TEST(MlLabelEncoder, TensorKeysAndValues) {
  auto k = attr("keys_tensor", ir::AttrType::kTensor);
  k.t = make<int32_t>(DType::kInt32, {3, 5}, {2});
  auto v = attr("values_tensor", ir::AttrType::kTensor);
  v.t = make<double>(DType::kFloat64, {0.25, 0.5}, {2});
  auto y = run_ml("LabelEncoder", 4, {make<int32_t>(DType::kInt32, {5, 3, 4}, {3})}, {k, v});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto out = values<double>(*y);
  EXPECT_EQ(out[0], 0.5);
  EXPECT_EQ(out[1], 0.25);
  EXPECT_EQ(out[2], 0.0);
}

TEST(MlLabelEncoder, MismatchedLengthsAndTypesAreErrors) {
  auto k = attr("keys_strings", ir::AttrType::kStrings);
  k.strings = {"a", "b"};
  auto v = attr("values_int64s", ir::AttrType::kInts);
  v.ints = {0};
  EXPECT_FALSE(run_ml("LabelEncoder", 4, {make<std::string>(DType::kString, {"a"}, {1})}, {k, v}).is_ok());
  v.ints = {0, 1};
  // Input type differs from the key type.
  EXPECT_FALSE(run_ml("LabelEncoder", 4, {make<int64_t>(DType::kInt64, {1}, {1})}, {k, v}).is_ok());
}

}  // namespace
}  // namespace sdx
