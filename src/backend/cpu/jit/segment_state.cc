#include "backend/cpu/jit/segment_state.h"

namespace sdx::jit {

const char* segment_state_name(SegmentState s) {
  switch (s) {
#define SDX_JIT_SEGMENT_STATE(enumerator, NAME, summary) \
  case SegmentState::enumerator: return #NAME;
#include "backend/cpu/jit/jit_states.inc"
#undef SDX_JIT_SEGMENT_STATE
  }
  return "?";
}

}  // namespace sdx::jit
