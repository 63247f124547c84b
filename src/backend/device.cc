#include "backend/device.h"

#include <algorithm>

namespace sdx::backend {

DeviceRegistry& DeviceRegistry::global() {
  static DeviceRegistry registry;
  return registry;
}

void DeviceRegistry::add(std::shared_ptr<Device> device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto at = std::find_if(devices_.begin(), devices_.end(),
                         [&](const std::shared_ptr<Device>& d) { return d->priority() < device->priority(); });
  devices_.insert(at, std::move(device));
}

void DeviceRegistry::remove(const Device* device) {
  std::lock_guard<std::mutex> lock(mu_);
  devices_.erase(std::remove_if(devices_.begin(), devices_.end(),
                                [&](const std::shared_ptr<Device>& d) { return d.get() == device; }),
                 devices_.end());
}

Device* DeviceRegistry::find(DeviceKind k) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& d : devices_)
    if (d->kind() == k) return d.get();
  return nullptr;
}

Device* DeviceRegistry::place(const ir::Node& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  Device* cpu = nullptr;
  for (const auto& d : devices_) {
    if (d->supports(node)) return d.get();
    if (d->kind() == DeviceKind::kCpu) cpu = d.get();
  }
  return cpu;
}

std::vector<Device*> DeviceRegistry::devices() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Device*> out;
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

}  // namespace sdx::backend
