// Test helper for the NN kernel tests (nn_*_test.cc): runs one node through a real
// Session and returns its outputs (or the error).
//
//   auto y = nn_test::run("MatMul", {nn_test::f32({1, 2, 3, 4}, {2, 2}), nn_test::f32({1, 0, 0, 1}, {2, 2})});
//   ASSERT_TRUE(y.is_ok()) << y.status().to_string();
//   nn_test::expect_near(nn_test::vals<float>((*y)[0]), {1, 2, 3, 4});
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/session.h"

namespace sdx::nn_test {

inline ir::Attribute attr_int(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute attr_float(const std::string& name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kFloat;
  a.f = v;
  return a;
}
inline ir::Attribute attr_str(const std::string& name, const std::string& v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kString;
  a.s = v;
  return a;
}
inline ir::Attribute attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInts;
  a.ints = v;
  return a;
}

template <typename T>
Tensor make(DType dt, const std::vector<T>& v, const std::vector<int64_t>& dims) {
  Tensor t = Tensor::allocate(dt, Shape(dims)).value();
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < t.numel(); ++i) t.data<T>()[i] = v[i];
  return t;
}
inline Tensor f32(const std::vector<float>& v, const std::vector<int64_t>& dims) { return make(DType::kFloat32, v, dims); }
inline Tensor i64(const std::vector<int64_t>& v, const std::vector<int64_t>& dims) { return make(DType::kInt64, v, dims); }

template <typename T>
std::vector<T> vals(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// Builds a one-node model with `num_outputs` outputs and runs it. An undefined
// Tensor in `inputs` is an omitted optional input.
inline Result<std::vector<Tensor>> run(const std::string& op, const std::vector<Tensor>& inputs,
                                       const std::vector<ir::Attribute>& attrs = {}, int opset = 21,
                                       int num_outputs = 1) {
  ir::Model m;
  m.opsets[""] = opset;
  m.graph = std::make_shared<ir::Graph>("g");
  std::vector<ir::Value*> ins;
  std::vector<std::pair<std::string, Datum>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      ins.push_back(nullptr);
      continue;
    }
    const std::string name = "x" + std::to_string(i);
    ins.push_back(m.graph->add_input(name, ir::TypeInfo::tensor(inputs[i].dtype())));
    feeds.emplace_back(name, Datum::tensor(inputs[i]));
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("y" + std::to_string(i));
  ir::Node* n = m.graph->add_node(op, "", op + "0", ins, outs);
  n->set_opset(opset);
  for (const auto& a : attrs) n->add_attribute(a);
  for (int i = 0; i < num_outputs; ++i) m.graph->add_output(n->output(i));
  auto s = runtime::Session::create(std::move(m));
  if (!s.is_ok()) return s.status();
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> res, (*s)->run(feeds), "run");
  std::vector<Tensor> out;
  for (auto& d : res) out.push_back(d.as_tensor());
  return out;
}

}  // namespace sdx::nn_test
