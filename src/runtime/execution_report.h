// ExecutionReport: what one run did (the DSP document's sdx_execution_report_t),
// filled by Session::run on request and by sdxRun in the C ABI.
//
//   ExecutionReport rep;
//   SDX_RETURN_IF_ERROR(session->run(*ctx, inputs, n, {}, &rep), "");
//   printf("%s, %lld replays, %.1f us avg\n", execution_mode_name(rep.mode_used), rep.replay_count, rep.avg_latency_us);
#pragma once

#include <cstdint>

#include "runtime/plan_phase.h"
#include "runtime/session_options.h"

namespace sdx::opt {
struct OptimizationReport;
}

namespace sdx::runtime {

struct ExecutionReport {
  int32_t slot_count = 0;  // slots (values) in the plan that ran
  // The mode this call actually used: SLOT_BY_SLOT (warmup, shapes frozen, fallbacks) or
  // CPU_REPLAY (the captured plan was replayed).
  ExecutionMode mode_used = ExecutionMode::kSlotBySlot;
  // The mode the session was asked for (SessionOptions::execution_mode, SDX_EXECUTION_MODE), and why the
  // session runs another one instead (that mode's backend or device is missing: see execution_mode.h),
  // or null. The string lives as long as the session.
  ExecutionMode mode_requested = ExecutionMode::kAuto;
  const char* mode_fallback_reason = nullptr;
  PlanPhase phase = PlanPhase::kWarmup;  // the plan's phase after this call
  int64_t replay_count = 0;              // replays of this plan so far, this call included
  int64_t call_count = 0;                // calls of this plan so far, this call included
  double avg_latency_us = 0;             // average latency of this plan's calls
  int64_t peak_memory_bytes = 0;         // memory the plan holds: planned intermediates + static inputs/outputs
  int32_t captured_steps = 0;            // steps replayed as bound calls or through run() into frozen memory
  int32_t gap_steps = 0;                 // data-dependent steps run eagerly between captured ones
  int32_t slot_by_slot_steps = 0;        // other steps run eagerly (they read a gap's output)
  // CPU_JIT (the kernel JIT) in this plan: fusible segments found, segments replayed as one
  // compiled kernel each and the steps they replaced, segments still compiling, and segments
  // that run unfused for good (compiler missing or failing, kernel rejected).
  int32_t jit_segments = 0;
  int32_t jit_fused_segments = 0;
  int32_t jit_fused_steps = 0;
  int32_t jit_pending_segments = 0;
  int32_t jit_failed_segments = 0;
  // Shape buckets (runtime/shape_buckets.h): the entries this call's bucketed dims were padded by (their
  // sum; 0: the call ran at the shapes given).
  int64_t bucket_padding = 0;
  // Why this call did not replay, or null: a static string, so filling the report never allocates.
  const char* fallback_reason = nullptr;
  // What the optimizer did when the session loaded (rewrites per pass); owned by the session.
  const opt::OptimizationReport* optimization = nullptr;
};

}  // namespace sdx::runtime
