#include "runtime/session_options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace sdx::runtime {

const char* execution_mode_name(ExecutionMode m) {
  return m == ExecutionMode::kAuto ? "AUTO" : "SLOT_BY_SLOT";
}

SessionOptions SessionOptions::from_env(SessionOptions base) {
  if (const char* v = std::getenv("SDX_EXECUTION_MODE")) {
    std::string mode(v);
    for (char& c : mode) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (mode == "SLOT_BY_SLOT") base.execution_mode = ExecutionMode::kSlotBySlot;
    else if (mode == "AUTO") base.execution_mode = ExecutionMode::kAuto;
  }
  if (const char* v = std::getenv("SDX_NO_MEMORY_PLANNER"); v && std::string(v) == "1")
    base.execution_mode = ExecutionMode::kSlotBySlot;
  if (const char* v = std::getenv("SDX_WARMUP_ITERATIONS")) base.warmup_runs = std::max(1, std::atoi(v));
  if (const char* v = std::getenv("SDX_INTRA_OP_THREADS")) base.intra_op_num_threads = std::atoi(v);
  if (const char* v = std::getenv("SDX_LOG_LEVEL")) base.log_level = std::atoi(v);
  return base;
}

}  // namespace sdx::runtime
