#include "runtime/step_profile.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "obs/events.h"
#include "runtime/session.h"

namespace sdx::runtime {
namespace {

Tensor zeros(Shape s) { return Tensor::allocate(DType::kFloat32, std::move(s), cpu_allocator(), true).value(); }

TEST(StepProfile, ShapesFlopsAndBytesOfAMatMul) {
  ir::Graph g("g");
  ir::Value* a = g.add_input("a", ir::TypeInfo::tensor(DType::kFloat32));
  ir::Value* b = g.add_input("b", ir::TypeInfo::tensor(DType::kFloat32));
  ir::Node* n = g.add_node("MatMul", "", "mm", {a, b}, {"y"});
  Tensor x = zeros(Shape{2, 3}), w = zeros(Shape{3, 4}), y = zeros(Shape{2, 4});
  StepProfile p = profile_step(*n, {&x, &w}, {&y});
  EXPECT_STREQ(p.shapes, "float[2, 3], float[3, 4] -> float[2, 4]");
  EXPECT_DOUBLE_EQ(p.flops, 2.0 * 2 * 4 * 3);
  EXPECT_EQ(p.bytes, (6u + 12u + 8u) * 4u);
  ir::Node* r = g.add_node("Relu", "", "r", {a}, {"z"});
  EXPECT_EQ(profile_step(*r, {&x}, {nullptr}).flops, 0.0);  // no declared cost
}

// x[4, 64] -> MatMul W[64, 32] -> Relu: replay emits one kernel event per op (MatMul with its GFLOP/s)
// and one memory event for the input copy.
TEST(StepProfile, ReplayEmitsKernelAndMemoryEvents) {
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", ir::TypeInfo::tensor(DType::kFloat32));
  ir::Value* w = m.graph->add_initializer("w", zeros(Shape{64, 32}));
  ir::Node* mm = m.graph->add_node("MatMul", "", "mm", {x, w}, {"h"});
  mm->set_opset(17);
  ir::Node* relu = m.graph->add_node("Relu", "", "relu", {mm->output(0)}, {"y"});
  relu->set_opset(17);
  m.graph->add_output(relu->output(0));
  SessionOptions o;
  o.optimizer.enabled = false;
  o.jit.enabled = false;
  auto s = Session::create(std::move(m), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  auto ctx = (*s)->create_context();
  Tensor in = zeros(Shape{4, 64});
  const int64_t dims[] = {4, 64};
  TensorArg arg{DType::kFloat32, dims, 2, in.raw_data()};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*s)->run(*ctx, &arg, 1).is_ok());
  std::vector<obs::KernelEvent> kernels;
  std::vector<obs::MemoryEvent> copies;
  obs::EventCallbacks cb;
  cb.kernel = [&](const obs::KernelEvent& e) { kernels.push_back(e); };
  cb.memory = [&](const obs::MemoryEvent& e) { copies.push_back(e); };
  const int id = obs::EventBus::global().subscribe(cb);
  ASSERT_TRUE((*s)->run(*ctx, &arg, 1).is_ok());
  obs::EventBus::global().unsubscribe(id);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_STREQ(kernels[0].op, "MatMul");
  EXPECT_STREQ(kernels[0].node, "mm");
  EXPECT_STREQ(kernels[0].shapes, "float[4, 64], float[64, 32] -> float[4, 32]");
  EXPECT_DOUBLE_EQ(kernels[0].flops, 2.0 * 4 * 32 * 64);
  EXPECT_GT(kernels[0].gflops, 0);
  EXPECT_EQ(kernels[0].bytes, (256u + 2048u + 128u) * 4u);
  EXPECT_STREQ(kernels[1].op, "Relu");
  EXPECT_EQ(kernels[1].flops, 0);
  EXPECT_GT(kernels[1].gbps, 0);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].bytes, 256u * 4u);
}

}  // namespace
}  // namespace sdx::runtime
