// FusionScoring (the DSP document's heuristic): is fusing a segment worth it? It weighs the
// time fusion saves (one dispatch instead of one per op, and intermediates that are never
// written to memory and read back) against what the fused kernel costs (its own dispatch, and
// spills once more values are live at once than the CPU has vector registers). The score is
// saved / (saved + cost), in [0, 1): a single op scores 0, long chains of cheap ops approach 1.
// Segments scoring below the threshold (SDX_JIT_FUSION_SCORE_THRESHOLD, default 0.5) stay unfused.
//
//   FusionScore s = score_fusion(ir);
//   if (s.score >= options.fusion_score_threshold) ... compile ...
#pragma once

#include <string>

#include "backend/cpu/jit/segment_ir.h"

namespace sdx::jit {

struct FusionScore {
  double saved_ns = 0;  // estimated time saved per call
  double cost_ns = 0;   // estimated cost of the fused kernel per call
  double score = 0;     // saved / (saved + cost)
  std::string explain() const;  // "score 0.98: saves ~4000 ns (199 dispatches, 12.4 KiB not stored), costs ~10 ns"
};

FusionScore score_fusion(const SegmentIR& ir);

}  // namespace sdx::jit
