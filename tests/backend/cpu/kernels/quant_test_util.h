// Test helper for the cast and quantization kernel tests (cast*_test.cc, quant_*_test.cc):
// runs one node through a real Session.
//
//   auto y = quant_test::run("Cast", {quant_test::make<float>(DType::kFloat32, {1.5f}, {1})},
//                            {quant_test::attr_int("to", 7)});
//   ASSERT_TRUE(y.is_ok()) << y.status().to_string();
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/session.h"

namespace sdx::quant_test {

inline ir::Attribute attr_int(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInt;
  a.i = v;
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

// A tensor whose storage is filled from v (for packed types pass the packed bytes as uint8_t).
template <typename T>
Tensor make(DType dt, const std::vector<T>& v, const std::vector<int64_t>& dims) {
  Tensor t = Tensor::allocate(dt, Shape(dims), cpu_allocator(), /*zero=*/true).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
  return t;
}

template <typename T>
std::vector<T> vals(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}
inline std::vector<uint8_t> bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

// Builds a one-node model and runs it. An undefined Tensor in `inputs` is an omitted optional input.
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

}  // namespace sdx::quant_test
