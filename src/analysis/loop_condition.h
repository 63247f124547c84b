// LoopCondition: how a Loop body's condition output reads the loop-carried values, found by walking the
// body graph from the condition back to the body's inputs. The termination prediction
// (analysis/termination.h) extrapolates one carried scalar against a constant; this finds that form when
// the condition has it (a comparison, possibly under Not, of a carried value, or a reduction of one, with
// a constant scalar), and otherwise the carried values the condition depends on.
//
//   // body(i, cond, x) -> (x' > 0, x'), x' = x * 1.1
//   analysis::LoopCondition c = analysis::analyze_loop_condition(body);
//   // c.form->describe() == "x > 0", c.carried == 0 (body input 2), c.field == StatField::kMean
//   // c.depends_on == {0}, c.describe({"x"}) == "x > 0"
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/loop_trace.h"
#include "analysis/termination.h"
#include "ir/graph.h"

namespace sdx::analysis {

struct LoopCondition {
  // The condition is `form`: carried value `carried` (0-based, body input 2 + carried; form->variable is
  // that input's name) read through `field` (a scalar's value is its mean) against a constant.
  std::optional<ConditionForm> form;
  int carried = -1;
  StatField field = StatField::kMean;
  // The form reads the carried value's new value (the body's output, which enters the next iteration)
  // rather than the one the iteration started with.
  bool reads_new_value = true;
  // Carried values (0-based) the condition depends on, in order.
  std::vector<int> depends_on;
  // The condition output is the constant true, or the condition input passed through: nothing in the body
  // can end the loop.
  bool always_true = false;
  std::string note;  // why there is no form, when there is none
  // "x > 0", or a sentence: "depends on x, y (not a comparison of one carried scalar with a constant)".
  // carried_names: one per carried value (the body's inputs 2...).
  std::string describe(const std::vector<std::string>& carried_names) const;
};

LoopCondition analyze_loop_condition(const ir::Graph& body);

}  // namespace sdx::analysis
