// DeviceKind: the kinds of device a plan step or an execution mode can need. One table of names; which
// kinds this process can run is the device registry's answer (backend/device.h).
#pragma once

namespace sdx {

enum class DeviceKind : unsigned char {
  kNone,  // AUTO: no device of its own
  kCpu,
  kCuda,
  kRocm,
  kMetal,
  kVulkan,
  kLevelZero,
  kOnnxRuntime,
  kOpenVino,
  kAcl,
  kNnapi,
};

const char* device_kind_name(DeviceKind k);

}  // namespace sdx
