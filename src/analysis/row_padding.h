// Row padding: which symbolic input dims sdx may pad by itself (issue 21: "on by default where it is safe").
//
//   std::map<std::string, std::string> proof = analysis::prove_row_dims(graph);
//   // proof["batch_size"] == ""          padding it is exact: rows are independent
//   // proof["sequence_length"] == "node 'Softmax_3' (Softmax) mixes positions along it (axis 3)"
//
// A dim B may be padded when the model treats the positions along it as independent rows: each row of every
// output is computed from the same row of the inputs that carry B, and from nothing else that depends on B
// (a Shape of a tensor carrying B may shape other tensors, not enter arithmetic). Then padding B (zeros in
// front: runtime/shape_buckets.h) changes the padded rows only, and slicing them off gives the exact result.
//
// The proof walks the graph once per symbol of the inputs, before the optimizer (standard ONNX ops, shapes
// inferred with their symbols: ir/shape_inference.h, ir/symbolic_scalar.h). A value carries B at the one axis
// of its inferred shape named B, or B times other dims where a Reshape folds attention heads into the batch
// ("6*B": ir/dim_product.h; B must stay the outer factor, ops meet rows grouped alike, outputs carry B itself); sizes (Shape / Size of such a value, and what is computed from them alone)
// are followed apart. Each op's rule (one table, row_padding.cc) says where the op mixes positions: the axes
// of an input it reduces, contracts, indexes, concatenates or slices along, the inputs that may hold sizes (a
// Reshape's target), how its outputs' axes follow. What has no rule, a value of unknown shape on the way, B
// twice in one shape or inside a sum ("past + B"), a Reshape that moves B across other dims, a subgraph that
// reads a row value, a size read as data (Range, arithmetic), an integer division (padded zeros): not
// proven, and the reason names the node. Graph outputs must carry B where the model declares it (or not
// depend on it). Conservative: an unproven dim keeps its exact shapes.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace sdx::analysis {

// The graph outputs that carry a proven dim, with its axis there: (output name, axis), from the inferred
// shapes (an output the model declares with a placeholder, "LayerNorm_dim_0", has the dim there all the same).
// Padding slices them back there.
using OutputAxes = std::vector<std::pair<std::string, int>>;

// For each symbolic dim of the graph's (non-initializer) inputs: "" when padding it is exact, else why not;
// `output_axes` (when given) gets, per proven dim, its OutputAxes. The graph's types and shapes must be
// inferred (ir::infer_types).
std::map<std::string, std::string> prove_row_dims(const ir::Graph& graph,
                                                  std::map<std::string, OutputAxes>* output_axes = nullptr);

}  // namespace sdx::analysis
