#include "core/device_kind.h"

namespace sdx {

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::kNone: return "none";
    case DeviceKind::kCpu: return "CPU";
    case DeviceKind::kCuda: return "CUDA";
    case DeviceKind::kRocm: return "ROCm";
    case DeviceKind::kMetal: return "Metal";
    case DeviceKind::kVulkan: return "Vulkan";
    case DeviceKind::kLevelZero: return "Level Zero";
    case DeviceKind::kOnnxRuntime: return "onnxruntime";
    case DeviceKind::kOpenVino: return "OpenVINO";
    case DeviceKind::kAcl: return "ARM Compute Library";
    case DeviceKind::kNnapi: return "NNAPI";
  }
  return "?";
}

}  // namespace sdx
