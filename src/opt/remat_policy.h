// RematPolicy: which values RematerializationOptimizations (pass 22) recomputes next to readers far
// from the first ones, and when readers count as far apart. CommonSubexpressionElimination (pass 14)
// asks the same questions before merging two identical cheap generators, so that it does not merge
// back what rematerialization split (the two would undo each other every round and the pipeline
// would never reach a fixpoint).
//
//   if (is_rematerializable(g, *n) && has_far_gap(positions_of_readers)) ...  // remat splits, CSE keeps
#pragma once

#include <vector>

#include "ir/graph.h"

namespace sdx::opt {

// Readers whose positions in the execution order (nodes()) differ by more than this are far apart.
inline constexpr int kRematDistance = 16;
// Outputs with a static size below this many bytes are not worth recomputing.
inline constexpr int64_t kRematMinBytes = 4096;
// Inputs of at most this many elements (Shape outputs, scalars) are tiny: keeping them alive longer
// to recompute a large value from them costs nothing.
inline constexpr int64_t kRematTinyInputElements = 64;

// n (a node of g) is a cheap generator whose output can be recomputed anywhere: ConstantOfShape,
// Expand, Range or Tile of the default domain, one output, no subgraph, every input a constant, a
// graph input of g or tiny, and an output of at least kRematMinBytes (or of unknown static size).
bool is_rematerializable(const ir::Graph& g, const ir::Node& n);

// Sorted positions contain two neighbours more than kRematDistance apart.
bool has_far_gap(std::vector<int> positions);

}  // namespace sdx::opt
