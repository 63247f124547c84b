#include "runtime/introspection.h"

#include <gtest/gtest.h>

namespace sdx::runtime {
namespace {

using ir::Dim;
using ir::TypeInfo;

// x[4,8] -> Relu -> Neg -> Reshape(view, [32]) -> Abs -> y
std::unique_ptr<Session> chain_session() {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::fixed(4), Dim::fixed(8)}));
  int64_t shape_values[1] = {32};
  ir::Value* shape = g.add_initializer("shape", Tensor::from_values(DType::kInt64, Shape{1}, shape_values));
  auto node = [&](const char* op, const char* name, std::vector<ir::Value*> in) {
    ir::Node* n = g.add_node(op, "", name, in, {std::string(name) + "_out"});
    n->set_opset(17);
    return n->output(0);
  };
  ir::Value* a = node("Relu", "a", {x});
  ir::Value* b = node("Neg", "b", {a});
  ir::Value* c = node("Reshape", "c", {b, shape});
  ir::Value* d = node("Abs", "d", {c});
  g.add_output(d);
  auto s = Session::create(std::move(m));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return std::move(s).value();
}

int p_slot(const PlanIntrospection& info, const std::string& name) {
  for (const SlotReport& r : info.slots)
    if (r.name == name) return r.index;
  return -2;
}

TEST(Introspection, RecordsShapesViewsAndPlansMemory) {
  auto s = chain_session();
  Tensor x = Tensor::allocate(DType::kFloat32, Shape{4, 8}, cpu_allocator(), true).value();
  auto info = introspect(*s, {{"x", Datum::tensor(x)}});
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->num_steps, 4);
  auto row = [&](const std::string& name) -> const SlotReport& {
    for (const SlotReport& r : info->slots)
      if (r.name == name) return r;
    ADD_FAILURE() << "no slot " << name;
    return info->slots[0];
  };
  EXPECT_EQ(row("a_out").type, "float[4, 8]");
  EXPECT_EQ(row("a_out").bytes, 128);
  EXPECT_EQ(row("c_out").type, "float[32]");
  EXPECT_TRUE(row("c_out").view);   // Reshape aliases its input...
  EXPECT_FALSE(row("b_out").view);  // ...whose slot owns the memory and lives until c_out's last reader
  EXPECT_EQ(row("c_out").color, -1);
  EXPECT_GE(row("b_out").color, 0);
  EXPECT_EQ(row("b_out").last, 3);  // its last reader is the Reshape (step 2); its view's is step 3
  // Introspection drives the plan through its lifecycle: every step captured, the plan replaying.
  EXPECT_EQ(info->phase, "REPLAYING");
  EXPECT_EQ(info->captured_steps, 4);
  EXPECT_EQ(row("a_out").state, "REPLAYING");
  EXPECT_EQ(row("c_out").node_phase, "CAPTURED");  // the view keeps its address from call to call
  EXPECT_EQ(row("c_out").wiring, (std::vector<int>{p_slot(*info, "b_out"), p_slot(*info, "shape")}));
  EXPECT_TRUE(row("d_out").requested_output);
  EXPECT_EQ(row("d_out").color, -1);
  EXPECT_GE(row("a_out").color, 0);
  // a_out [0, 1] and b_out [1, 3] (through its view) overlap: two buffers.
  EXPECT_EQ(info->memory.naive_bytes, 256);
  EXPECT_EQ(info->memory.planned_bytes(), 256);
  std::string text = format_introspection(*info);
  EXPECT_NE(text.find("c_out"), std::string::npos);
  EXPECT_NE(text.find("one buffer per slot"), std::string::npos);
}

TEST(Introspection, BadFeedsFailCleanly) {
  auto s = chain_session();
  auto info = introspect(*s, {});
  ASSERT_FALSE(info.is_ok());
  EXPECT_NE(info.status().message().find("missing input 'x'"), std::string::npos) << info.status().message();
}

}  // namespace
}  // namespace sdx::runtime

namespace sdx::runtime {
namespace {

TEST(Introspection, ReportsWavesAndConcurrentGroupsWithInterOp) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, std::vector<Dim>{Dim::fixed(4), Dim::fixed(8)}));
  auto node = [&](const char* op, const char* name, std::vector<ir::Value*> in) {
    ir::Node* n = g.add_node(op, "", name, in, {std::string(name) + "_out"});
    n->set_opset(17);
    return n->output(0);
  };
  ir::Value* a = node("Relu", "a", {x});  // wave 0: a, b; wave 1: c
  ir::Value* b = node("Neg", "b", {x});
  g.add_output(node("Add", "c", {a, b}));
  SessionOptions o;
  o.inter_op_num_threads = 2;
  o.jit.enabled = false;
  auto s = Session::create(std::move(m), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  Tensor t = Tensor::allocate(DType::kFloat32, Shape{4, 8}, cpu_allocator(), true).value();
  auto info = introspect(**s, {{"x", Datum::tensor(t)}});
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->num_waves, 2);
  EXPECT_EQ(info->concurrent_groups, 1);
  EXPECT_EQ(info->concurrent_steps, 2);
  EXPECT_NE(format_introspection(*info).find("inter-op: 2 waves; 1 groups of bound calls run concurrently (2 steps)"),
            std::string::npos);
}

}  // namespace
}  // namespace sdx::runtime
