// Building graphs with subgraphs in the control-flow pass tests (if_inlining_optimizations_test.cc,
// loop_invariant_hoisting_optimizations_test.cc): a graph attribute, and a one-output node at opset 17
// whose output takes the node's name.
//
//   ir::Value* y = node(body, "Mul", "m", {x, w});
//   iff->add_attribute(graph_attr("then_branch", then_g));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace sdx::test {

inline ir::Attribute graph_attr(const std::string& name, std::shared_ptr<ir::Graph> g) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kGraph;
  a.g = std::move(g);
  return a;
}

inline ir::Value* node(ir::Graph& g, const std::string& op, const std::string& name, const std::vector<ir::Value*>& in,
                       std::vector<ir::Attribute> attrs = {}) {
  ir::Node* n = g.add_node(op, "", name, in, {name});
  n->set_opset(17);
  for (ir::Attribute& a : attrs) n->add_attribute(std::move(a));
  return n->output(0);
}

}  // namespace sdx::test
