// Checks of a call's inputs against the model's declared inputs, with errors that name the input and
// what was expected (Session::run's first step, before any plan is touched).
//
//   SDX_RETURN_IF_ERROR(check_input(session.inputs()[i], args[i]), "");
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/datum.h"
#include "core/status.h"
#include "ir/graph.h"
#include "runtime/tensor_arg.h"
#include "runtime/value_info.h"

namespace sdx::runtime {

// Element type, rank, fixed dims, element count and data pointer of a positional argument. A valid
// call allocates nothing here (messages are built only on failure).
Status check_input(const ValueInfo& info, const TensorArg& a);
// A named feed: a tensor as above, a sequence where the model takes one, anything for an optional.
Status check_input(const ValueInfo& info, const Datum& d);

// Named feeds sorted onto the model's inputs. `plannable`: every input is a plain tensor and nothing
// overrides an initializer, so the call may take the planned (replayed) path.
struct BoundFeeds {
  std::vector<const Datum*> by_input;  // parallel to the session's inputs; null = not fed (an optional)
  std::vector<std::pair<const ir::Value*, const Datum*>> overrides;  // initializers that are also graph inputs
  bool plannable = true;
};
Result<BoundFeeds> bind_feeds(const ir::Graph& graph, const std::vector<ValueInfo>& inputs,
                              const std::vector<std::pair<std::string, Datum>>& feeds);

// Positions of output names in `outputs` (an unknown name is an error listing the model's outputs).
Result<std::vector<int>> output_positions(const std::vector<ValueInfo>& outputs, const std::vector<std::string>& names);

}  // namespace sdx::runtime
