// The segment finder: classifies each step of a plan by its op's DSP category and groups runs
// of consecutive fusible steps into segments, lowered to SegmentIR. ELEMENTWISE steps fuse
// (float32 ops of jit_ops.inc whose output has the segment's shape, with inputs that broadcast
// to it as one contiguous block of dims); every other category is a segment boundary.
// A value produced inside a segment becomes a segment output when a later step, a subgraph or
// the caller reads it; the rest never reach memory.
//
//   std::vector<ValueType> types = ...;   // per plan slot: element type and frozen shape
//   for (const Segment& s : find_segments(plan, types)) ... s.ir, s.first_step, s.input_values ...
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "backend/cpu/jit/segment_ir.h"
#include "plan/plan.h"

namespace sdx::jit {

struct ValueType {
  bool known = false;
  DType dtype = DType::kUndefined;
  Shape shape;
};

struct Segment {
  int first_step = 0, last_step = 0;  // consecutive plan steps, inclusive
  SegmentIR ir;
  std::vector<int> input_values;   // ir::Value::index() of each IR input
  std::vector<int> output_values;  // ir::Value::index() of each IR output
  int num_steps() const { return last_step - first_step + 1; }
};

// Segments of two or more steps, in plan order. `types` is indexed by plan slot.
std::vector<Segment> find_segments(const plan::Plan& plan, const std::vector<ValueType>& types);

// Whether a step could join an ELEMENTWISE segment (its op, attributes and types), and if not why.
bool step_is_fusible(const plan::Plan& plan, int step, const std::vector<ValueType>& types, std::string* why = nullptr);

}  // namespace sdx::jit
