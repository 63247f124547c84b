#include "runtime/jit_plan.h"

#include <cstdio>

#include "backend/cpu/jit/jit_engine.h"

namespace sdx::runtime {

jit::SegmentState PlannedSegment::state() const {
  using jit::SegmentState;
  if (!compiled) return SegmentState::kBelowThreshold;
  if (fused) return SegmentState::kFused;
  switch (compiled->state()) {
    case jit::JitState::kPending: return SegmentState::kCompiling;
    case jit::JitState::kFailed: return SegmentState::kFailed;
    case jit::JitState::kReady: break;
  }
  return not_fused_why.empty() ? SegmentState::kReady : SegmentState::kRejected;
}

std::string PlannedSegment::status() const {
  std::string s = jit::segment_state_name(state());
  if (!compiled) return s + " (" + score.explain() + ")";
  switch (compiled->state()) {
    case jit::JitState::kPending: return s + " (in the background; the unfused steps run meanwhile)";
    case jit::JitState::kFailed: return s + ": " + compiled->failure() + " (the unfused steps run)";
    case jit::JitState::kReady: break;
  }
  if (!not_fused_why.empty()) return s + ": " + not_fused_why + " (the unfused steps run)";
  std::string how = compiled->cache_hit() ? "disk cache hit" : "compiled";
  char buf[96];
  if (!compiled->cache_hit() && compiled->compile_seconds() > 0) {
    std::snprintf(buf, sizeof buf, " in %.2f s", compiled->compile_seconds());
    how += buf;
  }
  if (fused) {
    std::snprintf(buf, sizeof buf, "; %.1f us fused, %.1f us unfused", fused_us, unfused_us);
    how += buf;
  }
  if (!fused) how += "; swapped in at the next replay";
  return s + " (" + how + ", key " + compiled->key() + ")";
}

int JitPlan::count(jit::SegmentState state) const {
  int n = 0;
  for (const PlannedSegment& s : segments) n += s.state() == state ? 1 : 0;
  return n;
}

std::unique_ptr<JitPlan> make_jit_plan(const plan::Plan& plan, const std::vector<jit::ValueType>& types,
                                       jit::JitEngine& engine) {
  auto jp = std::make_unique<JitPlan>();
  jp->threshold = engine.options().fusion_score_threshold;
  jp->keep_only_faster = engine.options().keep_only_faster;
  for (jit::Segment& seg : jit::find_segments(plan, types)) {
    PlannedSegment ps;
    ps.score = jit::score_fusion(seg.ir);
    ps.segment = std::move(seg);
    if (ps.score.score >= jp->threshold) ps.compiled = engine.request(ps.segment.ir);
    jp->segments.push_back(std::move(ps));
  }
  return jp;
}

}  // namespace sdx::runtime
