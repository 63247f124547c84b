// Checks shared by the algebraic passes (BroadcastElimination, Reordering, Algebraic,
// Peephole, ArithmeticChain, StrengthReduction): when does a constant operand leave
// the other operand's shape alone, which binary ops use numpy broadcasting, which
// element types are IEEE floats, and dropping a producer a rewrite left unused.
//
//   // Add(x, zeros) -> x only when the zeros broadcast into x without changing its shape:
//   if (const Tensor* c = constant_value(n.input(1)); c && broadcasts_into(c->shape().dims(), n.input(0))) ...
//   // after making the outer node read x directly:
//   remove_if_unused(g, inner);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "ir/graph.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {

// The tensor shape of v when its rank is known (dims may be symbolic), or null.
const std::vector<ir::Dim>* known_dims(const ir::Value* v);
// Numpy broadcasting of `dims` into x's shape leaves it unchanged: rank(dims) <= rank(x) and every
// dim (right-aligned) is 1 or equals x's fixed dim. False when x's rank is unknown.
bool broadcasts_into(const std::vector<int64_t>& dims, const ir::Value* x);
// Numpy broadcast of fixed shapes, or nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_static(const std::vector<std::vector<int64_t>>& shapes);

// n is a binary arithmetic/logic op with numpy (multidirectional) broadcasting: opset >= 7 and no
// legacy "broadcast"/"axis" attributes.
bool uses_numpy_broadcast(const ir::Node& n);

// Removes n when none of its outputs is read or a graph output (a producer a rewrite bypassed).
void remove_if_unused(ir::Graph& g, ir::Node* n);

}  // namespace sdx::opt
