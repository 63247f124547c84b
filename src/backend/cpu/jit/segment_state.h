// SegmentState: what became of one fusible segment of a plan (runtime/jit_plan.h's PlannedSegment),
// from the table in jit_states.inc. The names are what users see (introspection, `sdx inspect --jit`);
// code compares enumerators, never those strings.
//
//   if (s.state() == jit::SegmentState::kFused) ...
//   printf("%s\n", jit::segment_state_name(s.state()));  // "FUSED"
#pragma once

#include <cstdint>

namespace sdx::jit {

enum class SegmentState : uint8_t {
#define SDX_JIT_SEGMENT_STATE(enumerator, NAME, summary) enumerator,
#include "backend/cpu/jit/jit_states.inc"
#undef SDX_JIT_SEGMENT_STATE
};

// FUSED, COMPILING, READY, FAILED, REJECTED, BELOW_THRESHOLD (each row's summary says what it means).
const char* segment_state_name(SegmentState s);

}  // namespace sdx::jit
