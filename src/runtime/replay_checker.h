// The replay checker: runs a model's captured plan and the slot-by-slot reference side by side on the
// same inputs and names the first slot whose values differ, and the first that holds NaN or Inf.
//
//   SDX_ASSIGN_OR_RETURN(ReplayCheck c, check_replay(*session, feeds), "");
//   std::cout << c.summary();   // "replay diverges first at slot 17 'h1' (Gelu 'mlp/gelu', step 12): ..."
//
// The reference is one slot-by-slot run that keeps a copy of every value. The replay side drives a
// fresh context through warmup and capture to REPLAYING, then replays once more, comparing each value
// right after the call that writes it (replay reuses buffers, so later is too late). Values computed
// inside a fused JIT segment and consumed only there are not materialized in replay and are skipped
// (the JIT already checked the fused kernel bit for bit before swapping it in).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"

namespace sdx::runtime {

struct SlotLocation {
  int slot = -1, step = -1;
  std::string value, op, node;
};

struct ReplayCheck {
  bool replayed = false;          // the plan reached REPLAYING; false: nothing was compared
  std::string not_replayed_why;
  int compared = 0;               // values compared
  int skipped = 0;                // not materialized in replay (inside fused segments), or not tensors
  bool diverged = false;          // some value differs beyond atol
  SlotLocation first_divergence;  // in execution order
  double max_abs_diff = 0;        // at first_divergence
  int64_t first_index = -1;       // flat index of its first differing element
  bool nonfinite = false;         // replay produced NaN or Inf
  SlotLocation first_nonfinite;
  bool reference_nonfinite = false;  // ... and so did the reference at that slot
  std::string summary() const;
};

// atol 0 compares bit for bit (replay is bitwise identical to slot by slot for a given thread count);
// a positive atol allows that much absolute difference per element. Inputs must be plain tensors.
Result<ReplayCheck> check_replay(const Session& session, const std::vector<std::pair<std::string, Datum>>& feeds,
                                 double atol = 0);

}  // namespace sdx::runtime
