// Devices: the CPU is registered and takes every node it has a kernel for; a second device registered by
// a test (standing in for an accelerator backend) takes the nodes it supports, the plan records it per
// step, and the session runs with no change to the runtime.
#include "backend/device.h"

#include <gtest/gtest.h>

#include "runtime/session.h"

namespace sdx::backend {
namespace {

using ir::TypeInfo;

TEST(Device, TheCpuIsRegisteredAndTakesWhatItSupports) {
  DeviceRegistry& r = DeviceRegistry::global();
  Device* cpu = r.find(DeviceKind::kCpu);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->name(), "cpu");
  EXPECT_EQ(r.find(DeviceKind::kCuda), nullptr);
  void* p = cpu->allocator()->allocate(100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kTensorAlignment, 0u);
  cpu->allocator()->free(p);
  EXPECT_TRUE(cpu->create_stream()->synchronize().is_ok());

  ir::Graph g("g");
  ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32));
  ir::Node* relu = g.add_node("Relu", "", "relu", {x}, {"y"});
  relu->set_opset(17);
  ir::Node* bogus = g.add_node("NoSuchOp", "", "bogus", {x}, {"z"});
  bogus->set_opset(17);
  EXPECT_TRUE(cpu->supports(*relu));
  EXPECT_FALSE(cpu->supports(*bogus));
  EXPECT_EQ(r.place(*relu), cpu);
  EXPECT_EQ(r.place(*bogus), cpu);  // the CPU's lookup then reports it unsupported
}

// A stand-in accelerator: its own registry with one op (Neg, run by the CPU's kernel, counted).
class TestDevice final : public Device {
 public:
  TestDevice() {
    KernelDef def = *KernelRegistry::cpu().find("Neg", "", 17);
    KernelFactory cpu_create = def.create;
    def.create = [this, cpu_create](const ir::Node& n) {
      ++created;
      return cpu_create(n);
    };
    registry_.add(std::move(def));
  }
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string name() const override { return "test:0"; }
  Allocator* allocator() const override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream() const override { return nullptr; }
  const KernelRegistry& kernels() const override { return registry_; }
  int priority() const override { return 10; }
  mutable int created = 0;

 private:
  KernelRegistry registry_;
};

TEST(Device, ASecondDeviceTakesTheNodesItSupportsAndThePlanRecordsIt) {
  auto dev = std::make_shared<TestDevice>();
  DeviceRegistry::global().add(dev);
  ir::Model m;
  m.opsets[""] = 17;
  m.graph = std::make_shared<ir::Graph>("g");
  ir::Value* x = m.graph->add_input("x", TypeInfo::tensor(DType::kFloat32));
  ir::Node* neg = m.graph->add_node("Neg", "", "neg", {x}, {"n"});
  ir::Node* relu = m.graph->add_node("Relu", "", "relu", {neg->output(0)}, {"y"});
  neg->set_opset(17);
  relu->set_opset(17);
  m.graph->add_output(relu->output(0));
  runtime::SessionOptions o;
  o.optimizer.enabled = false;
  auto s = runtime::Session::create(std::move(m), o);
  DeviceRegistry::global().remove(dev.get());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(dev->created, 1);
  const auto& steps = (*s)->plan().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].node->op_type(), "Neg");
  EXPECT_EQ(steps[0].device, DeviceKind::kCuda);
  EXPECT_EQ(steps[1].device, DeviceKind::kCpu);
  auto out = (*s)->run({{"x", Datum::tensor(Tensor::from_values(DType::kFloat32, Shape{2}, std::vector<float>{1.f, -2.f}.data()))}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = (*out)[0].as_tensor();
  EXPECT_EQ(y.data<float>()[0], 0.f);
  EXPECT_EQ(y.data<float>()[1], 2.f);
}

}  // namespace
}  // namespace sdx::backend
