// DeviceKind: the kinds of device an execution mode can need, and which of them this process has a
// backend for. The CPU is the only backend sdx has so far; a backend for another kind (CUDA first)
// makes its modes available by answering true here for a device it finds.
#pragma once

#include <string>

namespace sdx::runtime {

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
// Whether a backend for `k` is built in and has a device; when not, *why says what is missing.
bool device_available(DeviceKind k, std::string* why);

}  // namespace sdx::runtime
