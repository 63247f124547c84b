// SessionOptions: typed configuration for a Session. Environment variables
// (SDX_*) are parsed once into this struct by from_env(); see the README table.
#pragma once

#include <cstdint>
#include <string>

namespace sdx::runtime {

enum class ExecutionMode : uint8_t {
  kAuto,        // warm up, then run with memory planned per input-shape signature
  kSlotBySlot,  // every run allocates each intermediate afresh (the reference path)
};
const char* execution_mode_name(ExecutionMode m);

struct SessionOptions {
  ExecutionMode execution_mode = ExecutionMode::kAuto;
  // Runs per input-shape signature that record shapes before memory is frozen (>= 1).
  int warmup_runs = 1;
  // Intra-op threads for kernels that parallelize (0 = default: physical cores).
  int intra_op_num_threads = 0;
  // Log level: 0 = errors only, 1 = warnings, 2 = info, 3 = verbose.
  int log_level = 1;

  // Overlays SDX_* environment variables onto `base`.
  static SessionOptions from_env(SessionOptions base);
};

}  // namespace sdx::runtime
