// Test helper for the element-wise kernel tests: runs one node through a real
// Session and returns its first output (or the error).
//
//   auto y = run_node("Add", {f32({1, 2}, {2}), f32({10}, {1})});
//   ASSERT_TRUE(y.is_ok()) << y.status().to_string();
//   EXPECT_EQ(values<float>(*y), (std::vector<float>{11, 12}));
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/session.h"

namespace sdx::testing_ew {

inline ir::Attribute attr_f(const std::string& name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kFloat;
  a.f = v;
  return a;
}
inline ir::Attribute attr_i(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute attr_s(const std::string& name, const std::string& v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kString;
  a.s = v;
  return a;
}

template <typename T>
Tensor make(DType dt, const std::vector<T>& v, const std::vector<int64_t>& dims) {
  Tensor t = Tensor::allocate(dt, Shape(dims)).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
  return t;
}
inline Tensor f32(const std::vector<float>& v, const std::vector<int64_t>& dims) { return make(DType::kFloat32, v, dims); }
inline Tensor i32(const std::vector<int32_t>& v, const std::vector<int64_t>& dims) { return make(DType::kInt32, v, dims); }
inline Tensor i64(const std::vector<int64_t>& v, const std::vector<int64_t>& dims) { return make(DType::kInt64, v, dims); }
inline Tensor bools(const std::vector<bool>& v, const std::vector<int64_t>& dims) {
  Tensor t = Tensor::allocate(DType::kBool, Shape(dims)).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Builds a one-node model (inputs of unknown shape) and runs it. An undefined
// Tensor in `inputs` is passed as an omitted optional input.
inline Result<Tensor> run_node(const std::string& op, const std::vector<Tensor>& inputs,
                               const std::vector<ir::Attribute>& attrs = {}, int opset = 21) {
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
  ir::Node* n = m.graph->add_node(op, "", op + "0", ins, {"y"});
  n->set_opset(opset);
  for (const auto& a : attrs) n->add_attribute(a);
  m.graph->add_output(n->output(0));
  SDX_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(m)), "create");
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, session->run(feeds), "run");
  return out[0].as_tensor();
}

}  // namespace sdx::testing_ew
