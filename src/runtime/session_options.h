// SessionOptions: typed configuration for a Session. Every option's names, environment variable,
// default, range and help are one row of session_options.inc (session_option_table.h reads it);
// from_env() overlays the SDX_* variables once, when a session is created.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/loop_policy.h"
#include "core/status.h"
#include "backend/cpu/jit/jit_options.h"
#include "opt/optimizer_options.h"
#include "runtime/execution_mode.h"

namespace sdx::runtime {

struct SessionOptions {
  ExecutionMode execution_mode = ExecutionMode::kAuto;
  // Runs per input-shape signature that record shapes before memory is frozen (>= 1).
  int warmup_runs = 1;
  // Symbolic input dims padded up to buckets: "NAME=STEP" entries (runtime/shape_buckets.h).
  std::vector<std::string> shape_buckets;
  // Without shape_buckets: varying dims proven independent rows switch to automatic buckets (session_buckets.cc).
  bool auto_shape_buckets = true;
  // Read by the Python InferenceSession only (python/sdx/_kv_streams.py): a with-past decoder's step loop
  // runs on its paged form with the past kept in the session's buffers. The engine itself ignores it.
  bool kv_streams = true;
  // Plan cache: at most this many plans (one per caller context, output set and input
  // shapes) hold frozen memory; the least recently used beyond it is evicted.
  int plan_cache_max_count = 32;
  // ... and together they hold at most this fraction of physical memory.
  double plan_cache_memory_fraction = 0.25;
  // An explicit budget in bytes instead of the fraction (0 = use the fraction).
  int64_t plan_cache_memory_budget_bytes = 0;
  // Intra-op threads for kernels that parallelize (0 = default: physical cores).
  int intra_op_num_threads = 0;
  // Inter-op parallelism on independent branches (1 = off). Above 1, plans are ordered in waves of
  // mutually independent steps, and a replay runs the bound steps of one wave at the same time,
  // each single-threaded, on the session's one pool, which then has
  // max(intra_op_num_threads, inter_op_num_threads) threads.
  int inter_op_num_threads = 1;
  // If/Loop/Scan bodies lifted to models of their own and run on their own plans (runtime/body_session.h);
  // off: interpreted node by node on every call and iteration.
  bool subgraph_plans = true;
  // Log level: 0 = errors only, 1 = warnings, 2 = info, 3 = verbose.
  int log_level = 1;
  // The graph optimizer's controls (SDX_OPTIMIZER_*).
  opt::OptimizerOptions optimizer;
  // The kernel JIT (CPU_JIT: fused elementwise segments; SDX_JIT_*).
  jit::JitOptions jit;
  // The disk plan cache (api/plan_disk_cache.h): on by default; its root ("" = the default) and size cap.
  bool disk_plan_cache = true;
  std::string disk_plan_cache_dir;
  int64_t disk_plan_cache_max_bytes = int64_t{2} << 30;
  // Loop nodes: the guards (max_loop_iterations, max_loop_seconds) and the loop analysis (loop_analysis*),
  // handed to the Loop kernel through the session's analysis::LoopMonitor.
  analysis::LoopPolicy loops;

  // Overlays the SDX_* environment variables of session_options.inc onto `base`, then checks every field
  // against its row (floors such as warmup_runs >= 1 raise the value; other ranges are errors). A malformed
  // variable (SDX_WARMUP_ITERATIONS=abc) is an invalid_argument naming it, its value and what it accepts.
  static Result<SessionOptions> from_env(SessionOptions base);
  // plan_cache_memory_fraction of this machine's physical memory, in bytes.
  int64_t plan_cache_budget_bytes() const;
};

}  // namespace sdx::runtime
