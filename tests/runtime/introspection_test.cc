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
  EXPECT_TRUE(row("c_out").view);  // Reshape aliases its input...
  EXPECT_TRUE(row("b_out").view);  // ...so the aliased slot is kept out of shared memory too
  EXPECT_TRUE(row("d_out").requested_output);
  EXPECT_EQ(row("d_out").color, -1);
  EXPECT_GE(row("a_out").color, 0);
  // Planned: only a_out is shareable here (b/c are views, d is the output).
  EXPECT_EQ(info->memory.naive_bytes, 128);
  EXPECT_EQ(info->memory.planned_bytes(), 128);
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
