// RecordedSlot: what the warmup runs saw of one plan slot (runtime/shape_recorder.h records it), the
// input to memory layout (plan/memory_layout.h).
#pragma once

#include "core/dtype.h"
#include "core/shape.h"

namespace sdx::plan {

struct RecordedSlot {
  bool seen = false;    // a step produced a tensor here in some run
  bool stable = true;   // same type and shape in every recorded run
  bool shared = false;  // its memory is also held by a sequence (or by a view of unknown lifetime)
  int view_of = -1;     // a view (Reshape, Identity, Split...) of this slot's memory: the root slot
  DType dtype = DType::kUndefined;
  Shape shape;
};

}  // namespace sdx::plan
