// Which device kinds this process can run: a kind is available when a device of that kind is in the
// device registry (backend/device.h). The CPU always is; a backend for another kind (CUDA first) makes
// its execution modes available by registering a device it finds.
#pragma once

#include <string>

#include "core/device_kind.h"

namespace sdx::runtime {

using sdx::DeviceKind;
using sdx::device_kind_name;

// Whether a device of kind `k` is registered; when not, *why says what is missing.
bool device_available(DeviceKind k, std::string* why);

}  // namespace sdx::runtime
