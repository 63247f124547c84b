// Text form of a graph, one node per line, for `sdx inspect` and debugging:
//
//   graph main (x: tensor(float)[N, 3]) -> (y)
//     y = Relu(x)            # node 'relu0'
#pragma once

#include <string>

#include "ir/graph.h"

namespace sdx::ir {

std::string print_graph(const Graph& graph, int indent = 0);

}  // namespace sdx::ir
