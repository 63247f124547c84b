#include "runtime/session_options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace sdx::runtime {

Result<SessionOptions> SessionOptions::from_env(SessionOptions base) {
  if (const char* v = std::getenv("SDX_EXECUTION_MODE")) {
    if (!parse_execution_mode(v, &base.execution_mode))
      return invalid_argument("SDX_EXECUTION_MODE='" + std::string(v) + "' is not an execution mode; the modes are " +
                              execution_mode_names());
  }
  if (const char* v = std::getenv("SDX_NO_MEMORY_PLANNER"); v && std::string(v) == "1")
    base.execution_mode = ExecutionMode::kSlotBySlot;
  if (const char* v = std::getenv("SDX_WARMUP_ITERATIONS")) base.warmup_runs = std::max(1, std::atoi(v));
  if (const char* v = std::getenv("SDX_PLAN_CACHE_MAX_COUNT")) base.plan_cache_max_count = std::max(1, std::atoi(v));
  if (const char* v = std::getenv("SDX_PLAN_CACHE_MEMORY_FRACTION")) {
    const double f = std::atof(v);
    if (f > 0 && f <= 1) base.plan_cache_memory_fraction = f;
  }
  if (const char* v = std::getenv("SDX_PLAN_CACHE_MEMORY_BUDGET_BYTES")) {
    const long long b = std::atoll(v);
    if (b > 0) base.plan_cache_memory_budget_bytes = b;
  }
  if (const char* v = std::getenv("SDX_INTRA_OP_THREADS")) base.intra_op_num_threads = std::atoi(v);
  if (const char* v = std::getenv("SDX_INTER_OP_THREADS")) base.inter_op_num_threads = std::max(1, std::atoi(v));
  if (const char* v = std::getenv("SDX_LOG_LEVEL")) base.log_level = std::atoi(v);
  base.optimizer = opt::OptimizerOptions::from_env(base.optimizer);
  base.jit = jit::JitOptions::from_env(base.jit);
  base.warmup_runs = std::max(1, base.warmup_runs);
  base.inter_op_num_threads = std::max(1, base.inter_op_num_threads);
  base.plan_cache_max_count = std::max(1, base.plan_cache_max_count);
  return base;
}

int64_t SessionOptions::plan_cache_budget_bytes() const {
  if (plan_cache_memory_budget_bytes > 0) return plan_cache_memory_budget_bytes;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  const double total = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 8e9;
  return static_cast<int64_t>(total * plan_cache_memory_fraction);
}

}  // namespace sdx::runtime
