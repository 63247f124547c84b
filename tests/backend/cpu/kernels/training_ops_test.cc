// Tests for src/backend/cpu/kernels/training_ops.cc (Adagrad, Adam, Momentum).
// Self-contained: builds one-node models inline and runs them through a Session.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"

namespace sdx {
namespace {

constexpr const char* kDomain = "ai.onnx.preview.training";

ir::Attribute attr_f(const std::string& name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kFloat;
  a.f = v;
  return a;
}
ir::Attribute attr_s(const std::string& name, const std::string& v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kString;
  a.s = v;
  return a;
}

// Runs op with inputs named in0..inN and n_out outputs; returns the outputs.
Result<std::vector<Datum>> run_optimizer(const std::string& op, const std::vector<Tensor>& inputs, int n_out,
                                         const std::vector<ir::Attribute>& attrs) {
  ir::Model m;
  m.opsets[""] = 21;
  m.opsets[kDomain] = 1;
  m.graph = std::make_shared<ir::Graph>("g");
  std::vector<ir::Value*> ins;
  std::vector<std::pair<std::string, Datum>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    ins.push_back(m.graph->add_input(name, ir::TypeInfo::tensor(inputs[i].dtype())));
    feeds.emplace_back(name, Datum::tensor(inputs[i]));
  }
  std::vector<std::string> outs;
  for (int i = 0; i < n_out; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = m.graph->add_node(op, kDomain, "opt0", ins, outs);
  n->set_opset(1);
  for (const auto& a : attrs) n->add_attribute(a);
  for (int i = 0; i < n_out; ++i) m.graph->add_output(n->output(i));
  SDX_ASSIGN_OR_RETURN(auto s, runtime::Session::create(std::move(m)), "create");
  return s->run(feeds);
}

Tensor vec(const std::vector<float>& v) {
  return Tensor::from_values(DType::kFloat32, Shape{static_cast<int64_t>(v.size())}, v.data());
}
Tensor scalar_f(float v) { return Tensor::from_values(DType::kFloat32, Shape{}, &v); }
Tensor scalar_i(int64_t v) { return Tensor::from_values(DType::kInt64, Shape{}, &v); }

std::vector<float> values(const Datum& d) {
  const Tensor& t = d.as_tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(TrainingOpsKernel, AdagradHandChecked) {
  // r' = 0.1 / (1 + 1 * 0.5) = 1/15; g = 0.5*1 + 1 = 1.5; h = 0 + 2.25; x = 1 - (1/15)*1.5/(1.5 + 0)
  auto out = run_optimizer("Adagrad", {scalar_f(0.1f), scalar_i(1), vec({1.f}), vec({1.f}), vec({0.f})}, 2,
                           {attr_f("norm_coefficient", 0.5f), attr_f("decay_factor", 0.5f), attr_f("epsilon", 0.f)});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_NEAR(values((*out)[0])[0], 1.f - 1.f / 15.f, 1e-6);
  EXPECT_NEAR(values((*out)[1])[0], 2.25f, 1e-6);
}

TEST(TrainingOpsKernel, AdamTwoTensorsLayout) {
  // t = 0: no bias correction. alpha = beta = 0.5, eps = 0: v = g/2, h = g^2/2,
  // x_new = x - r * v / sqrt(h) = x - r * sign(g) / sqrt(2).
  auto out = run_optimizer("Adam",
                           {scalar_f(1.f), scalar_i(0), vec({1.f}), vec({2.f, 3.f}), vec({4.f}), vec({-1.f, 1.f}),
                            vec({0.f}), vec({0.f, 0.f}), vec({0.f}), vec({0.f, 0.f})},
                           6, {attr_f("alpha", 0.5f), attr_f("beta", 0.5f), attr_f("epsilon", 0.f)});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const float k = 1.f / std::sqrt(2.f);
  EXPECT_NEAR(values((*out)[0])[0], 1.f - k, 1e-6);
  auto x2 = values((*out)[1]);
  EXPECT_NEAR(x2[0], 2.f + k, 1e-6);
  EXPECT_NEAR(x2[1], 3.f - k, 1e-6);
  EXPECT_NEAR(values((*out)[2])[0], 2.f, 1e-6);   // v1 = 4/2
  EXPECT_NEAR(values((*out)[5])[1], 0.5f, 1e-6);  // h2[1] = 1/2
}

TEST(TrainingOpsKernel, MomentumStandardAndNesterov) {
  // t = 1: v = 0.9*1 + 0.1*2 = 1.1; standard x = 1 - 0.5*1.1; nesterov x = 1 - 0.5*(2 + 0.9*1.1).
  std::vector<ir::Attribute> attrs = {attr_f("alpha", 0.9f), attr_f("beta", 0.1f), attr_f("norm_coefficient", 0.f),
                                      attr_s("mode", "standard")};
  std::vector<Tensor> in = {scalar_f(0.5f), scalar_i(1), vec({1.f}), vec({2.f}), vec({1.f})};
  auto std_out = run_optimizer("Momentum", in, 2, attrs);
  ASSERT_TRUE(std_out.is_ok()) << std_out.status().to_string();
  EXPECT_NEAR(values((*std_out)[0])[0], 1.f - 0.55f, 1e-6);
  EXPECT_NEAR(values((*std_out)[1])[0], 1.1f, 1e-6);
  attrs[3] = attr_s("mode", "nesterov");
  auto nes_out = run_optimizer("Momentum", in, 2, attrs);
  ASSERT_TRUE(nes_out.is_ok()) << nes_out.status().to_string();
  EXPECT_NEAR(values((*nes_out)[0])[0], 1.f - 0.5f * (2.f + 0.99f), 1e-6);
}

TEST(TrainingOpsKernel, RejectsBadInputs) {
  // Gradient shape differs from X.
  auto bad_shape = run_optimizer("Adagrad", {scalar_f(0.1f), scalar_i(0), vec({1.f, 2.f}), vec({1.f}), vec({0.f, 0.f})},
                                 2, {});
  EXPECT_FALSE(bad_shape.is_ok());
  // Input count not 2 + 3n.
  auto bad_arity = run_optimizer("Momentum", {scalar_f(0.1f), scalar_i(0), vec({1.f}), vec({1.f}), vec({0.f}), vec({0.f})},
                                 2, {attr_f("alpha", 0.9f), attr_f("beta", 0.1f), attr_f("norm_coefficient", 0.f),
                                     attr_s("mode", "standard")});
  EXPECT_FALSE(bad_arity.is_ok());
  // Unknown mode.
  auto bad_mode = run_optimizer("Momentum", {scalar_f(0.1f), scalar_i(0), vec({1.f}), vec({1.f}), vec({0.f})}, 2,
                                {attr_f("alpha", 0.9f), attr_f("beta", 0.1f), attr_f("norm_coefficient", 0.f),
                                 attr_s("mode", "sideways")});
  EXPECT_FALSE(bad_mode.is_ok());
  // T must be int64.
  auto bad_t = run_optimizer("Adagrad", {scalar_f(0.1f), scalar_f(1.f), vec({1.f}), vec({1.f}), vec({0.f})}, 2, {});
  EXPECT_FALSE(bad_t.is_ok());
}

TEST(TrainingOpsKernel, ZeroSizedTensors) {
  auto out = run_optimizer("Adagrad", {scalar_f(0.1f), scalar_i(0), vec({}), vec({}), vec({})}, 2, {});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].as_tensor().numel(), 0);
}

}  // namespace
}  // namespace sdx
