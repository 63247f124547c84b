#include "runtime/device_kind.h"

#include "backend/device.h"

namespace sdx::runtime {

bool device_available(DeviceKind k, std::string* why) {
  if (k == DeviceKind::kNone || backend::DeviceRegistry::global().find(k)) return true;
  if (why) *why = std::string("this build of sdx has no ") + device_kind_name(k) + " backend";
  return false;
}

}  // namespace sdx::runtime
