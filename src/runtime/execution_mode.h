// ExecutionMode: how a session runs its plans (the DSP document's GraphExecutionMode), from the one
// table in execution_modes.inc: names, ids, the device each needs and the fallback chain.
//
//   ExecutionMode m;
//   if (!parse_execution_mode("cuda_graphs", &m)) ...           // names (any case) or ids
//   ModeResolution r = resolve_execution_mode(m);               // on a CPU-only machine:
//   // r.used == kCpuReplay, r.reason == "CUDA_GRAPHS: this build of sdx has no CUDA backend; ..."
#pragma once

#include <cstdint>
#include <string>

namespace sdx::runtime {

enum class ExecutionMode : uint8_t {
#define SDX_EXECUTION_MODE(e, NAME, id, device, fallback, summary) e = id,
#include "runtime/execution_modes.inc"
#undef SDX_EXECUTION_MODE
};

const char* execution_mode_name(ExecutionMode m);
// Accepts names (case-insensitive; MLIR_CPU for CPU_REPLAY) and decimal ids; false when unknown.
bool parse_execution_mode(const std::string& text, ExecutionMode* out);
// Whether `id` is a mode's id (the C ABI's int32 field).
bool execution_mode_from_id(int64_t id, ExecutionMode* out);
// "AUTO, SLOT_BY_SLOT, CUDA_GRAPHS, ..." for error messages.
std::string execution_mode_names();

// The mode a session runs when `requested` is asked for: the first mode down the fallback chain whose
// device this process has (runtime/device_kind.h); on the CPU that is CPU_REPLAY or SLOT_BY_SLOT.
struct ModeResolution {
  ExecutionMode requested = ExecutionMode::kAuto;
  ExecutionMode used = ExecutionMode::kCpuReplay;
  // Why `used` is not `requested` (each unavailable mode and what it lacks); empty when the requested
  // mode runs, and for AUTO, which names no mode of its own.
  std::string reason;
};
ModeResolution resolve_execution_mode(ExecutionMode requested);

}  // namespace sdx::runtime
