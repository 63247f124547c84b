// lift_subgraph: a subgraph body (If branch, Loop/Scan body, any graph attribute) copied out of its
// enclosing graphs into a top-level graph of its own, so that it can be verified, optimized, planned
// and captured like a model (runtime/body_session.h). The body's outer-scope reads become explicit:
//
//   - the body's own inputs come first, unchanged;
//   - every outer-scope value the body or a graph nested in it reads, and that is not a constant, becomes
//     one more input, in first-read order (`captured`), typed as the outer value is;
//   - every outer-scope constant (an initializer that is not also a graph input) is copied in as an
//     initializer (`constants`; tensors share their bytes), so the body's optimizer can fold it.
//
// A body input or captured value of unknown type is taken to be a tensor (`assumed_tensors`).
// Graph outputs that are inputs, initializers or repeated get an Identity of their own (a top-level
// output is a value some node produces). The source graph is not modified.
//
//   SDX_ASSIGN_OR_RETURN(ir::LiftedBody lifted, ir::lift_subgraph(*node.attr("then_branch")->g), "");
//   feeds = body inputs..., then frame.lookup(v) for v in lifted.captured
#pragma once

#include <memory>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace sdx::ir {

struct LiftedBody {
  std::shared_ptr<Graph> graph;
  std::vector<const Value*> captured;   // outer values fed after the body's own inputs, in order
  std::vector<const Value*> constants;  // outer initializers copied in as initializers
  // Inputs (positions in graph->inputs()) whose source declares no type: typed as tensors of unknown
  // element type and shape here, so a call must check that it feeds a tensor there.
  std::vector<int> assumed_tensors;
};

// Fails (invalid_argument) when the body reads a value that no enclosing graph owns.
Result<LiftedBody> lift_subgraph(const Graph& body);

}  // namespace sdx::ir
