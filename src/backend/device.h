// Devices: where plan steps run. A Device gives its kind, its memory (an Allocator), its queues
// (Streams), its kernels (a KernelRegistry of its own) and what it supports, as ggml-backend's backends
// and IREE's HAL devices do. The CPU is the first implementation (backend/cpu/cpu_device.cc); another
// backend (CUDA first) registers a device the same way, with a DeviceRegistrar in its own files, and the
// runtime slots it in: GraphExecutor::prepare places every node on the first registered device, in order
// of preference, that supports it, records that device in the plan step (plan::Step::device) and takes
// the node's kernel from that device's registry; runtime::device_available (and with it the execution
// modes' fallback chain) asks this registry.
//
//   backend::Device* d = backend::DeviceRegistry::global().place(node);   // never null: the CPU takes all
//   std::unique_ptr<backend::Kernel> k = d->kernels().find(node)->create(node).value();
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/kernel_registry.h"
#include "core/allocator.h"
#include "core/device_kind.h"
#include "core/status.h"

namespace sdx::backend {

// A queue of work on a device. The CPU's runs everything synchronously on the calling thread, so its
// synchronize() has nothing to wait for; a GPU's would wrap a stream and wait on it.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Status synchronize() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;  // "cpu", "cuda:0"
  // Memory on the device (64-byte aligned on the CPU).
  virtual Allocator* allocator() const = 0;
  virtual std::unique_ptr<Stream> create_stream() const = 0;
  virtual const KernelRegistry& kernels() const = 0;
  // Preference when several devices support a node: higher first (an accelerator above the CPU).
  virtual int priority() const = 0;
  // Whether this device has a kernel for `node` at its opset (ggml-backend's supports_op). Element types
  // are checked by the kernel when it runs or binds (a kernel that declines a type fails with a message
  // naming it), so they are not part of this answer.
  bool supports(const ir::Node& node) const { return kernels().find(node) != nullptr; }
};

class DeviceRegistry {
 public:
  static DeviceRegistry& global();
  // Adds a device; devices are kept by priority, highest first (equal priorities in order of adding).
  void add(std::shared_ptr<Device> device);
  // Removes a device (tests that register a device of their own).
  void remove(const Device* device);
  // The first device of kind `k`, or null.
  Device* find(DeviceKind k) const;
  // The device a node runs on: the first, by priority, that supports it; the CPU's when none does (its
  // kernel lookup then reports the node unsupported).
  Device* place(const ir::Node& node) const;
  std::vector<Device*> devices() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Device>> devices_;
};

struct DeviceRegistrar {
  explicit DeviceRegistrar(std::shared_ptr<Device> device) { DeviceRegistry::global().add(std::move(device)); }
};

}  // namespace sdx::backend
