// JitPlan: the CPU_JIT part of one PlanEntry: the fusible segments found in its plan once its
// shapes are frozen (backend/cpu/jit/segment_finder.h), their FusionScoring score, the compiled kernel asked
// of the session's JitEngine for those above the threshold, and what became of each.
//
// Lifecycle: Session::freeze builds it (end of warmup) and requests the kernels: a disk-cache hit
// is READY at once, anything else compiles in the background. The replay handle (replay.h) swaps
// a READY kernel in at the first replay that finds it ready, after checking in that very call
// that it reproduces the unfused steps' outputs bit for bit and runs no slower than they do; until
// then, and for good when the compile fails or a check does, the unfused bound steps run. Written and read only by the
// entry's owner (one caller at a time); CompiledSegment::state() is the only cross-thread read.
//
//   for (const PlannedSegment& s : entry.jit()->segments) printf("%s\n", s.status().c_str());
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/jit/compiled_segment.h"
#include "backend/cpu/jit/fusion_scoring.h"
#include "backend/cpu/jit/segment_finder.h"
#include "backend/cpu/jit/segment_state.h"

namespace sdx::jit {
class JitEngine;
}

namespace sdx::runtime {

struct PlannedSegment {
  jit::Segment segment;
  jit::FusionScore score;
  std::shared_ptr<jit::CompiledSegment> compiled;  // null when the score is below the threshold
  bool fused = false;          // replaced its steps in the replay handle
  std::string not_fused_why;   // set when a READY kernel could not replace the steps
  // Measured in the replay that checked the kernel (0 before): the fused kernel (the best of 3 runs)
  // and the unfused steps it replaces. A kernel slower than the steps is not swapped in.
  double fused_us = 0, unfused_us = 0;

  // kFused, kCompiling, kReady (swapped in at the next replay), kFailed, kRejected, kBelowThreshold
  // (backend/cpu/jit/jit_states.inc; jit::segment_state_name prints them).
  jit::SegmentState state() const;
  // The state with its reason: "FUSED (disk cache hit)", "FAILED: no C++ compiler ...".
  std::string status() const;
};

struct JitPlan {
  double threshold = 0;
  bool keep_only_faster = true;  // JitOptions::keep_only_faster
  std::vector<PlannedSegment> segments;
  int count(jit::SegmentState state) const;
};

// Finds the segments of `plan` (types: per slot, as frozen) and requests kernels for those
// scoring at least engine.options().fusion_score_threshold.
std::unique_ptr<JitPlan> make_jit_plan(const plan::Plan& plan, const std::vector<jit::ValueType>& types,
                                       jit::JitEngine& engine);

}  // namespace sdx::runtime
