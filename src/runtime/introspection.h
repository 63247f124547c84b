// Plan introspection (the DSP document's PlanIntrospection): runs the model once
// slot by slot on the given feeds (a warmup), records every slot's element type
// and shape, and lays the intermediates out with the memory planner. Powers
// `sdx inspect --plan` and Session introspection from Python.
//
//   SDX_ASSIGN_OR_RETURN(PlanIntrospection info, introspect(*session, feeds), "");
//   std::cout << format_introspection(info);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plan/memory_planner.h"
#include "runtime/session.h"

namespace sdx::runtime {

struct SlotReport {
  int index = 0;
  std::string name;
  std::string kind;      // input | initializer | intermediate
  std::string producer;  // op type of the producing step ("" for inputs/initializers)
  int first = 0, last = 0;
  bool requested_output = false;
  bool view = false;  // aliases another slot's memory (Reshape, Identity, ...)
  bool gap = false;   // produced by a data-dependent step
  std::string type;   // "float[1, 128]", "" when the slot held no tensor
  int64_t bytes = 0;
  int color = -1;      // coloring buffer, -1 when not planned
  int64_t offset = -1; // arena offset, -1 when not planned
};

struct PlanIntrospection {
  int num_steps = 0;
  int num_gap_steps = 0;
  int num_dead_nodes = 0;
  std::vector<SlotReport> slots;
  plan::MemoryPlan memory;
};

Result<PlanIntrospection> introspect(const Session& session, const std::vector<std::pair<std::string, Datum>>& feeds);

// A table of slots followed by the memory summary.
std::string format_introspection(const PlanIntrospection& info);

}  // namespace sdx::runtime
