// Memory planner: decides where the intermediate values of a compiled plan live, so that values whose
// lifetimes do not overlap share memory. It knows nothing about graphs, tensors or devices: the caller
// describes each value by its size and its liveness (the step that produces it and the last step that
// reads it) and gets back two plans, computed side by side:
//
//   * coloring: greedy interval coloring (the "Buffer Coloring" of the design document); each color is
//     one separate buffer sized to its largest member, and values of one color never overlap in time;
//   * arena: one block, each value at a byte offset, placed greedily by size (TFLite's "greedy by
//     size"); two values overlapping in time never overlap in [offset, offset + bytes).
//
// The plan with fewer bytes is `chosen`; both are reported so `sdx inspect --plan` can show them.
//
//   std::vector<plan::BufferRequest> reqs = {
//       {.bytes = 4096, .first = 0, .last = 1},   // a = f(x),  read by step 1
//       {.bytes = 4096, .first = 1, .last = 2},   // b = g(a),  read by step 2
//       {.bytes = 4096, .first = 2, .last = 3},   // c = h(b):  reuses a's memory
//       {.bytes = 64, .first = 3, .last = 3, .excluded = true},  // requested output: own buffer
//   };
//   SDX_ASSIGN_OR_RETURN(plan::MemoryPlan p, plan::plan_memory(reqs), "planning memory");
//   p.color;            // {0, 1, 0, -1}
//   p.planned_bytes();  // 8192 (naive: 12288)
//   LOG << plan::describe(p);
//
// Liveness is inclusive and the boundary is strict: a value last read at step s may be reused by a
// value produced at step s + 1, never by one produced at step s (a kernel reads its inputs while it
// writes its outputs). Excluded values (requested outputs, view parents and children) are never shared
// and are not counted in any byte total; the caller allocates them itself. The executor honours the
// kill switch SDX_NO_MEMORY_PLANNER=1 by not calling this at all (one buffer per value).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace sdx::plan {

// One intermediate value.
struct BufferRequest {
  int64_t bytes = 0;      // 0 allowed
  int first = 0;          // step that produces it (>= 0)
  int last = 0;           // last step that reads it, inclusive; first <= last
  bool excluded = false;  // never shared, gets its own buffer, not counted as planned
};

struct MemoryPlan {
  enum class Strategy { kColoring, kArena };
  Strategy chosen = Strategy::kColoring;
  int64_t alignment = 64;

  // Coloring: per request its color (-1 when excluded); per color the buffer size.
  std::vector<int> color;
  std::vector<int64_t> color_bytes;
  // Arena: per request its byte offset in the block (-1 when excluded), a multiple of `alignment`.
  std::vector<int64_t> offset;

  int num_requests = 0;
  int num_excluded = 0;
  int64_t naive_bytes = 0;      // sum of non-excluded requests (one buffer per value)
  int64_t coloring_bytes = 0;   // sum of color_bytes
  int64_t arena_bytes = 0;      // size of the arena block (end of the highest placed value)
  int64_t peak_live_bytes = 0;  // max over steps of bytes live then: a lower bound for any plan

  int num_colors() const { return static_cast<int>(color_bytes.size()); }
  int64_t planned_bytes() const { return chosen == Strategy::kArena ? arena_bytes : coloring_bytes; }
};

const char* strategy_name(MemoryPlan::Strategy s);

// Plans both strategies and picks the smaller (coloring on a tie: separate buffers are simpler to
// hand to a backend). alignment must be a power of two; it applies to arena offsets only.
// Fails with invalid_argument naming the request on negative bytes, first < 0 or first > last, and
// with out_of_range when the sizes overflow int64.
Result<MemoryPlan> plan_memory(const std::vector<BufferRequest>& requests, int64_t alignment = 64);

// Checks the invariants of both strategies of `plan` against `requests`: no two time-overlapping
// requests share a color or overlapping bytes, colors are large enough, offsets aligned and inside the
// arena, excluded requests unplanned. internal_error naming the two requests otherwise. O(n^2).
Status verify_plan(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

// One paragraph for `sdx inspect --plan`, e.g. "memory plan: 12 values (2 excluded), naive 1.5 MiB;
// coloring 4 buffers 512 KiB; arena 448 KiB; peak live 448 KiB; chosen arena (saves 70.8%)".
std::string describe(const MemoryPlan& plan);

// "512 B", "1.5 KiB", "3.0 MiB": the byte figures describe() prints.
std::string format_bytes(int64_t bytes);

}  // namespace sdx::plan
