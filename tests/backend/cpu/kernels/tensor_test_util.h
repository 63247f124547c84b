// Test helper for the tensor-manipulation kernel tests: runs one node through a
// real Session and returns all its outputs (or the error).
//
//   auto ys = run_op("Transpose", {f32({1, 2, 3, 4}, {2, 2})});
//   ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
//   EXPECT_EQ(values<float>((*ys)[0]), (std::vector<float>{1, 3, 2, 4}));
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/session.h"

namespace sdx::testing_tensor {

inline ir::Attribute attr_i(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute attr_ints(const std::string& name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInts;
  a.ints = std::move(v);
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
inline Tensor i64(const std::vector<int64_t>& v, const std::vector<int64_t>& dims) { return make(DType::kInt64, v, dims); }
inline Tensor strs(const std::vector<std::string>& v, const std::vector<int64_t>& dims) {
  return make(DType::kString, v, dims);
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Builds a one-node model with `num_outputs` outputs and runs it. An undefined Tensor
// in `inputs` is passed as an omitted optional input.
inline Result<std::vector<Tensor>> run_op(const std::string& op, const std::vector<Tensor>& inputs,
                                          const std::vector<ir::Attribute>& attrs = {}, int num_outputs = 1,
                                          int opset = 21) {
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
  auto r = (*s)->run(feeds);
  if (!r.is_ok()) return r.status();
  std::vector<Tensor> result;
  for (const Datum& d : *r) result.push_back(d.as_tensor());
  return result;
}

}  // namespace sdx::testing_tensor
