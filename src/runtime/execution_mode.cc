#include "runtime/execution_mode.h"

#include <cctype>
#include <iterator>

#include "runtime/device_kind.h"

namespace sdx::runtime {
namespace {

struct ModeRow {
  ExecutionMode mode;
  const char* name;
  DeviceKind device;
  ExecutionMode fallback;
};

constexpr ModeRow kModes[] = {
#define SDX_EXECUTION_MODE(e, NAME, id, device, fallback, summary) \
  {ExecutionMode::e, #NAME, DeviceKind::device, ExecutionMode::fallback},
#include "runtime/execution_modes.inc"
#undef SDX_EXECUTION_MODE
};

const ModeRow* row(ExecutionMode m) {
  for (const ModeRow& r : kModes)
    if (r.mode == m) return &r;
  return nullptr;
}

}  // namespace

const char* execution_mode_name(ExecutionMode m) {
  const ModeRow* r = row(m);
  return r ? r->name : "?";
}

bool execution_mode_from_id(int64_t id, ExecutionMode* out) {
  for (const ModeRow& r : kModes)
    if (static_cast<int64_t>(r.mode) == id) {
      *out = r.mode;
      return true;
    }
  return false;
}

bool parse_execution_mode(const std::string& text, ExecutionMode* out) {
  std::string name(text);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name == "MLIR_CPU") name = "CPU_REPLAY";
  for (const ModeRow& r : kModes)
    if (name == r.name || name == std::to_string(static_cast<int>(r.mode))) {
      *out = r.mode;
      return true;
    }
  return false;
}

std::string execution_mode_names() {
  std::string s;
  for (const ModeRow& r : kModes) s += (s.empty() ? "" : ", ") + std::string(r.name);
  return s;
}

ModeResolution resolve_execution_mode(ExecutionMode requested) {
  ModeResolution res;
  res.requested = requested;
  std::string skipped, whys;
  ExecutionMode m = requested;
  // Every chain ends at SLOT_BY_SLOT (the CPU, always there); the bound only guards a broken table.
  for (size_t step = 0; step <= std::size(kModes); ++step) {
    const ModeRow* r = row(m);
    if (!r) break;
    std::string why;
    if (r->device != DeviceKind::kNone) {
      if (device_available(r->device, &why)) {
        res.used = m;
        if (requested != ExecutionMode::kAuto && !skipped.empty())
          res.reason = skipped + (skipped.find(',') == std::string::npos ? " is" : " are") + " not available (" + whys +
                       "); running " + r->name;
        return res;
      }
      skipped += (skipped.empty() ? "" : ", ") + std::string(r->name);
      if (whys.find(why) == std::string::npos) whys += (whys.empty() ? "" : "; ") + why;
    }
    m = r->fallback;
  }
  res.used = ExecutionMode::kSlotBySlot;
  return res;
}

}  // namespace sdx::runtime
