// ShapeRecorder: the warmup observer. During a top-level run it records, per
// plan slot, the element type and shape each step produced, and which slots
// share memory with another slot (views such as Reshape/Identity, tensors kept
// inside sequences, outer values passed out of a subgraph). Shared slots must
// not live in planned memory: their buffer outlives the slot's own liveness.
//
//   ShapeRecorder rec(executor.plan());
//   session.run(feeds, {}, &rec);          // once per warmup run
//   rec.slots()[s].shape ...  rec.slots()[s].shared ...  rec.slots()[s].stable ...
#pragma once

#include <vector>

#include "plan/plan.h"
#include "runtime/graph_executor.h"

namespace sdx::runtime {

struct RecordedSlot {
  bool seen = false;    // a step produced a tensor here in some run
  bool stable = true;   // same type and shape in every recorded run
  bool shared = false;  // its memory is also reachable through another slot or a sequence
  DType dtype = DType::kUndefined;
  Shape shape;
};

class ShapeRecorder final : public StepObserver {
 public:
  explicit ShapeRecorder(const plan::Plan& plan) : plan_(plan), slots_(plan.slots().size()) {}

  void on_step(int step, const ir::Node& node, const Frame& frame) override;
  const std::vector<RecordedSlot>& slots() const { return slots_; }

 private:
  void record(int slot, const Tensor& t);
  const plan::Plan& plan_;
  std::vector<RecordedSlot> slots_;
};

}  // namespace sdx::runtime
