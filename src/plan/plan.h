// plan::Plan: the immutable execution plan of one graph for one set of requested
// outputs. It fixes everything that does not depend on tensor values: which
// nodes run (dead nodes are filtered out), in what order, which slot each value
// lives in, how steps are wired to slots, each slot's liveness [first, last]
// and the release_at_step table that frees intermediates after their last read.
//
//   SDX_ASSIGN_OR_RETURN(plan::Plan p, plan::compile(graph, graph.outputs()), "");
//   for (const plan::Step& s : p.steps()) ... s.node, s.inputs (slot ids), s.outputs ...
//   for (int slot : p.release_at_step()[step]) free(slot);
//
// With CompileOptions::waves (inter-op parallelism), steps are ordered by wave: a step's wave is one
// more than the latest wave of the steps producing what it reads, so the steps of one wave are
// independent of each other and may run at the same time. Liveness is widened to whole waves (a
// value is live from the start of its producer's wave to the end of its last reader's wave), so
// memory planned from it stays valid when a wave's steps run concurrently.
//
// Steps whose op's output shapes depend on input values (its schema is not
// capturable: NonZero, control flow, ...) are marked gap: a captured plan runs
// them between captured segments.
#pragma once

#include <string>
#include <vector>

#include "core/device_kind.h"
#include "core/status.h"
#include "ir/graph.h"

namespace sdx::plan {

enum class SlotKind : uint8_t { kInput, kInitializer, kIntermediate };
const char* slot_kind_name(SlotKind k);

struct Slot {
  const ir::Value* value = nullptr;
  SlotKind kind = SlotKind::kIntermediate;
  int producer_step = -1;   // -1 for inputs and initializers
  int first = 0, last = 0;  // liveness in steps, inclusive; requested outputs live to the last step
  bool requested_output = false;
};

struct CompileOptions {
  bool waves = false;
};

struct Step {
  const ir::Node* node = nullptr;
  std::vector<int> inputs;   // slot per node input; -1 when omitted or read from an enclosing graph
  std::vector<int> outputs;  // slot per node output; -1 when omitted
  bool gap = false;          // output shapes depend on data
  DeviceKind device = DeviceKind::kCpu;  // where it runs (set when kernels are chosen, backend/device.h)
};

class Plan {
 public:
  const ir::Graph& graph() const { return *graph_; }
  const std::vector<Slot>& slots() const { return slots_; }
  const std::vector<Step>& steps() const { return steps_; }
  // Slots (intermediates only) whose last reader is step i.
  const std::vector<std::vector<int>>& release_at_step() const { return release_at_step_; }
  // Graph inputs that are not initializers, in declaration order (the placeholder index map).
  const std::vector<int>& placeholder_slots() const { return placeholders_; }
  const std::vector<int>& output_slots() const { return outputs_; }
  // The slot of a value owned by this graph, or -1 (dead or foreign).
  int slot_of(const ir::Value* v) const;
  int num_dead_nodes() const { return dead_nodes_; }
  // Compiled with CompileOptions::waves: the first step of each wave, plus steps().size() at the end
  // (wave w is steps [wave_begin()[w], wave_begin()[w + 1])). Empty otherwise.
  const std::vector<int>& wave_begin() const { return wave_begin_; }
  // Records the device each step runs on (the executor, once it has placed every node).
  template <typename F>
  void place_steps(F&& device_of) {
    for (Step& s : steps_) s.device = device_of(*s.node);
  }

 private:
  friend Result<Plan> compile(const ir::Graph& graph, const std::vector<ir::Value*>& requested_outputs,
                              const CompileOptions& options);
  const ir::Graph* graph_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<Step> steps_;
  std::vector<std::vector<int>> release_at_step_;
  std::vector<int> placeholders_, outputs_;
  std::vector<int> slot_by_value_;  // indexed by ir::Value::index()
  std::vector<int> wave_begin_;
  int dead_nodes_ = 0;
};

// Compiles a plan that produces `requested_outputs` (values of `graph` or of an
// enclosing graph, e.g. a subgraph output that passes an outer value through).
Result<Plan> compile(const ir::Graph& graph, const std::vector<ir::Value*>& requested_outputs,
                     const CompileOptions& options = {});

}  // namespace sdx::plan
