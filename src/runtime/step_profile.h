// StepProfile: what a kernel event says about a step besides its time: the shapes it read and wrote,
// its arithmetic cost (OpSchema::flops) and the bytes it moved. Computed from the tensors of one
// execution; a captured step's never change, so replay computes them once, at capture.
//
//   StepProfile p = profile_step(node, {&a, &b}, {&y});   // p.shapes: "float[2, 3], float[3, 4] -> float[2, 4]"
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "runtime/graph_executor.h"

namespace sdx::runtime {

struct StepProfile {
  const char* shapes = "";  // interned (obs::intern_name)
  double flops = 0;         // 0 when the op declares no cost
  uint64_t bytes = 0;       // bytes of the inputs read plus the outputs written
};

// Inputs and outputs may be null (omitted or not tensors).
StepProfile profile_step(const ir::Node& node, const std::vector<const Tensor*>& in, const std::vector<const Tensor*>& out);
// The same from the values a frame holds right after the step ran.
StepProfile profile_step(const ir::Node& node, const Frame& frame);

// Emits a KernelEvent for one execution to obs::EventBus::global() (call only when kObserveEvents is set).
void emit_kernel_event(const char* op, const char* node, const StepProfile& p, uint64_t start_ns, uint64_t ns);

}  // namespace sdx::runtime
