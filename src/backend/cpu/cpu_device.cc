// The CPU as a Device (backend/device.h): the process's 64-byte-aligned allocator, synchronous streams,
// and the kernels that register with KernelRegistry::cpu(). Registered at load, lowest priority: every
// node an accelerator does not take runs here.
#include "backend/device.h"

namespace sdx::cpu {
namespace {

class CpuStream final : public backend::Stream {
 public:
  Status synchronize() override { return Status::ok(); }  // kernels run on the calling thread
};

class CpuDevice final : public backend::Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string name() const override { return "cpu"; }
  Allocator* allocator() const override { return cpu_allocator(); }
  std::unique_ptr<backend::Stream> create_stream() const override { return std::make_unique<CpuStream>(); }
  const backend::KernelRegistry& kernels() const override { return backend::KernelRegistry::cpu(); }
  int priority() const override { return 0; }
};

const backend::DeviceRegistrar kCpu(std::make_shared<CpuDevice>());

}  // namespace
}  // namespace sdx::cpu
