// ShapeRecorder: the warmup observer. During a top-level run it records, per
// plan slot, the element type and shape each step produced, which slots are
// views of another slot's memory (Reshape, Identity, Squeeze...: view_of names
// the root slot that owns the buffer) and which share memory with a sequence
// (shared). The planner gives a view's root liveness until the view's last
// reader; shared slots stay out of planned memory.
//
//   ShapeRecorder rec(executor.plan());
//   session.run(feeds, {}, &rec);          // once per warmup run
//   rec.slots()[s].shape ...  rec.slots()[s].shared ...  rec.slots()[s].stable ...
#pragma once

#include <vector>

#include "plan/plan.h"
#include "plan/recorded_slot.h"
#include "runtime/graph_executor.h"

namespace sdx::runtime {

using plan::RecordedSlot;

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
