#include "runtime/debugger.h"

#include <gtest/gtest.h>

namespace sdx::runtime {
namespace {

// x -> Relu (a) -> Neg (b) -> Abs (y)
std::unique_ptr<Session> chain() {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* v = m.graph->add_input("x", ir::TypeInfo::tensor(DType::kFloat32));
  for (const char* op : {"Relu", "Neg", "Abs"}) {
    ir::Node* n = m.graph->add_node(op, "", std::string(op) + "_node", {v}, {std::string(op) + "_out"});
    n->set_opset(17);
    v = n->output(0);
  }
  m.graph->add_output(v);
  SessionOptions o;
  o.optimizer.enabled = false;
  return std::move(Session::create(std::move(m), o)).value();
}

TEST(Debugger, BreakpointsBySlotAndNameSeeTheValuesInOrder) {
  auto s = chain();
  Debugger dbg(*s);
  ASSERT_TRUE(dbg.break_at_value("Neg_out").is_ok());
  const int relu_slot = s->plan().steps()[0].outputs[0];
  ASSERT_TRUE(dbg.break_at_slot(relu_slot).is_ok());
  Tensor x = Tensor::allocate(DType::kFloat32, Shape{3}).value();
  x.data<float>()[0] = -1;
  x.data<float>()[1] = 2;
  x.data<float>()[2] = 3;
  std::vector<std::string> seen;
  std::vector<std::vector<float>> values;
  auto out = dbg.run({{"x", Datum::tensor(x)}}, [&](const BreakpointHit& h) {
    seen.push_back(*h.name + "@" + std::to_string(h.slot) + ":" + *h.op + "/" + *h.node);
    const Tensor& t = h.value->as_tensor();
    values.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  });
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "Relu_out@" + std::to_string(relu_slot) + ":Relu/Relu_node");
  EXPECT_EQ(seen[1].substr(0, 8), "Neg_out@");
  EXPECT_EQ(values[0], (std::vector<float>{0, 2, 3}));
  EXPECT_EQ(values[1], (std::vector<float>{-0.f, -2, -3}));
  EXPECT_EQ((*out)[0].as_tensor().data<float>()[2], 3.f);
}

TEST(Debugger, BadBreakpointsAreRefusedWithTheReason) {
  auto s = chain();
  Debugger dbg(*s);
  Status a = dbg.break_at_value("nope");
  EXPECT_EQ(a.code(), StatusCode::kNotFound);
  EXPECT_NE(a.message().find("'nope'"), std::string::npos);
  EXPECT_FALSE(dbg.break_at_slot(999).is_ok());
  Status in = dbg.break_at_value("x");
  EXPECT_FALSE(in.is_ok());
  EXPECT_NE(in.message().find("graph input"), std::string::npos) << in.message();
  EXPECT_TRUE(dbg.breakpoints().empty());
}

}  // namespace
}  // namespace sdx::runtime
