// Test helper for the attention, recurrent and signal kernel tests ("seq" family):
// runs one node (any domain) through a real Session and returns its outputs.
//
//   auto ys = seq_test::run("RNN", {x, w, r}, {seq_test::attr_i("hidden_size", 2)}, 2, 22);
//   ASSERT_TRUE(ys.is_ok()) << ys.status().to_string();
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace sdx::seq_test {

inline ir::Attribute attr_i(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute attr_f(const std::string& name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kFloat;
  a.f = v;
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

inline std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

inline void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], tol) << "at " << i;
}

// One-node model with num_outputs outputs; an undefined Tensor is an omitted input.
inline Result<std::vector<Tensor>> run(const std::string& op, const std::vector<Tensor>& inputs,
                                       const std::vector<ir::Attribute>& attrs = {}, int num_outputs = 1, int opset = 23,
                                       const std::string& domain = "") {
  ir::Model m;
  m.opsets[""] = domain.empty() ? opset : 23;
  if (!domain.empty()) m.opsets[domain] = opset;
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
  ir::Node* n = m.graph->add_node(op, domain, op + "0", ins, outs);
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

}  // namespace sdx::seq_test
