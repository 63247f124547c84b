// Shared helper for the CPU kernel tests: builds a one-node ir::Model, runs it
// through a real runtime::Session and hands back the node's outputs (or the error).
//
//   using namespace sdx::test;
//   auto y = run_node("ReduceSum", {f32({1, 2, 3, 4}, {2, 2})}, {attr_ints("axes", {1})}, /*opset=*/11);
//   ASSERT_TRUE(y.is_ok()) << y.status().to_string();
//   EXPECT_EQ(values<float>((*y)[0]), (std::vector<float>{3, 7}));
//
//   // Other domains / several outputs: fill a NodeSpec.
//   auto ys = run_node({.op = "RNN", .opset = 22, .inputs = {x, w, r}, .attrs = {attr_i("hidden_size", 2)},
//                       .num_outputs = 2});
//   // Just the first output: run_single("Add", {f32({1, 2}, {2}), f32({10}, {1})}) -> Result<Tensor>
//   // (or run_single(NodeSpec{...})); the session's Datums as they are: run_node_datums(NodeSpec{...}).
//
// An undefined Tensor() in the inputs is passed as an omitted optional input.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <random>
#include <vector>

#include "runtime/session.h"

namespace sdx::test {

// --- Attributes ------------------------------------------------------------

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
inline ir::Attribute attr_ints(const std::string& name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInts;
  a.ints = std::move(v);
  return a;
}
inline ir::Attribute attr_floats(const std::string& name, std::vector<float> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kFloats;
  a.floats = std::move(v);
  return a;
}
inline ir::Attribute attr_strings(const std::string& name, std::vector<std::string> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kStrings;
  a.strings = std::move(v);
  return a;
}
inline ir::Attribute attr_t(const std::string& name, Tensor v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kTensor;
  a.t = std::move(v);
  return a;
}

// --- Tensors -----------------------------------------------------------------

// A zero-initialised tensor whose first elements are taken from v (extra values are
// ignored). For packed sub-byte types pass the packed bytes as uint8_t.
template <typename T>
Tensor make(DType dt, const std::vector<T>& v, const std::vector<int64_t>& dims) {
  Tensor t = Tensor::allocate(dt, Shape(dims), cpu_allocator(), /*zero=*/true).value();
  const size_t n = std::min(v.size(), static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < n; ++i) t.data<T>()[i] = v[i];
  return t;
}
inline Tensor f32(const std::vector<float>& v, const std::vector<int64_t>& dims) { return make(DType::kFloat32, v, dims); }
// n random values over the whole range of an 8-bit integer type (int8 or uint8), and a tensor of them.
inline std::vector<int> random_8bit(DType t, int64_t n, std::mt19937& gen) {
  std::uniform_int_distribution<int> dist(t == DType::kInt8 ? -128 : 0, t == DType::kInt8 ? 127 : 255);
  std::vector<int> v(static_cast<size_t>(n));
  for (int& e : v) e = dist(gen);
  return v;
}
inline Tensor tensor_8bit(DType t, const std::vector<int>& v, const std::vector<int64_t>& dims) {
  return t == DType::kInt8 ? make(t, std::vector<int8_t>(v.begin(), v.end()), dims)
                           : make(t, std::vector<uint8_t>(v.begin(), v.end()), dims);
}
inline Tensor i32(const std::vector<int32_t>& v, const std::vector<int64_t>& dims) { return make(DType::kInt32, v, dims); }
inline Tensor i64(const std::vector<int64_t>& v, const std::vector<int64_t>& dims) { return make(DType::kInt64, v, dims); }
inline Tensor bools(const std::vector<bool>& v, const std::vector<int64_t>& dims) { return make(DType::kBool, v, dims); }
inline Tensor strs(const std::vector<std::string>& v, const std::vector<int64_t>& dims) {
  return make(DType::kString, v, dims);
}

// The elements of t as a vector (float unless told otherwise).
template <typename T = float>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}
template <typename T = float>
std::vector<T> values(const Datum& d) {
  return values<T>(d.as_tensor());
}
// The raw storage of t (e.g. packed int4 / float4 data).
inline std::vector<uint8_t> bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}
inline void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  expect_near(values<float>(t), want, tol);
}

// --- Running one node --------------------------------------------------------

struct NodeSpec {
  std::string op{};
  std::string domain{};  // "" = the default ONNX domain
  int opset = 21;        // opset of `domain`; with another domain the ONNX domain gets 23
  std::vector<Tensor> inputs{};
  std::vector<ir::Attribute> attrs{};
  int num_outputs = 1;
};

// The one-node model behind run_node: graph inputs x0, x1, ... (omitted inputs have
// none), the node (its only node), graph outputs y0, y1, ...
inline ir::Model one_node_model(const NodeSpec& spec) {
  ir::Model m;
  m.opsets[""] = spec.domain.empty() ? spec.opset : 23;
  if (!spec.domain.empty()) m.opsets[spec.domain] = spec.opset;
  m.graph = std::make_shared<ir::Graph>("g");
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const Tensor& x = spec.inputs[i];
    ins.push_back(x.defined() ? m.graph->add_input("x" + std::to_string(i), ir::TypeInfo::tensor(x.dtype())) : nullptr);
  }
  std::vector<std::string> outs;
  for (int i = 0; i < spec.num_outputs; ++i) outs.push_back("y" + std::to_string(i));
  ir::Node* n = m.graph->add_node(spec.op, spec.domain, spec.op + "0", ins, outs);
  n->set_opset(spec.opset);
  for (const auto& a : spec.attrs) n->add_attribute(a);
  for (int i = 0; i < spec.num_outputs; ++i) m.graph->add_output(n->output(i));
  return m;
}

// The node's outputs as Datums, as the session returns them.
inline Result<std::vector<Datum>> run_node_datums(const NodeSpec& spec) {
  std::vector<std::pair<std::string, Datum>> feeds;
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].defined()) feeds.emplace_back("x" + std::to_string(i), Datum::tensor(spec.inputs[i]));
  SDX_ASSIGN_OR_RETURN(auto session, runtime::Session::create(one_node_model(spec)), "create");
  return session->run(feeds);
}

inline Result<std::vector<Tensor>> run_node(const NodeSpec& spec) {
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> res, run_node_datums(spec), "run_node");
  std::vector<Tensor> out;
  for (const Datum& d : res) out.push_back(d.as_tensor());
  return out;
}

// Shorthand for the default ONNX domain.
inline Result<std::vector<Tensor>> run_node(const std::string& op, std::vector<Tensor> inputs,
                                            std::vector<ir::Attribute> attrs = {}, int opset = 21,
                                            int num_outputs = 1) {
  return run_node(NodeSpec{.op = op,
                           .opset = opset,
                           .inputs = std::move(inputs),
                           .attrs = std::move(attrs),
                           .num_outputs = num_outputs});
}

// Runs a single-output node and returns that output.
inline Result<Tensor> run_single(const std::string& op, std::vector<Tensor> inputs,
                                 std::vector<ir::Attribute> attrs = {}, int opset = 21) {
  SDX_ASSIGN_OR_RETURN(std::vector<Tensor> out, run_node(op, std::move(inputs), std::move(attrs), opset), "run_single");
  return out[0];
}
// Same for a NodeSpec (e.g. another domain).
inline Result<Tensor> run_single(const NodeSpec& spec) {
  SDX_ASSIGN_OR_RETURN(std::vector<Tensor> out, run_node(spec), "run_single");
  return out[0];
}

}  // namespace sdx::test
