// Static evaluation of small tensors a rewrite needs to know at optimization time: shape arithmetic
// (Shape -> Gather -> Sub -> Unsqueeze feeding a Slice's starts) and constant masks sliced out of a
// buffer (the GPT-2 causal mask: bias[:, :, k_len - q_len : k_len, :k_len]). It reads constants, Constant
// nodes and static dims of value types, and follows a handful of ops, so it works before (and without)
// constant folding; anything else, or an unknown dim that reaches the result, gives nullopt.
//
//   if (auto m = static_value(where->input(0)); m && m->known())
//     ... m->dims, m->at({0, 0, i, j}) ...
//
// Ops followed: Constant, Identity, Shape (start/end), Gather (1-D data), Unsqueeze, Squeeze, Reshape,
// Flatten, Cast (between bool, integer and float types), Concat (1-D), Add, Sub, Mul, Div (integer
// division truncates), Neg, Slice (any rank, positive steps; attribute form before opset 10).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "ir/graph.h"

namespace sdx::opt {

struct StaticTensor {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<double> values;  // row-major; NaN marks an unknown element (a symbolic dim read by Shape)
                               // in integer tensors; bool as 0/1

  int64_t numel() const { return static_cast<int64_t>(values.size()); }
  // Every element known (for float tensors: not NaN, so float NaN constants count as unknown).
  bool known() const;
};

// The value of v when it follows statically from constants and static shapes, with at most
// max_elements elements along the way.
std::optional<StaticTensor> static_value(const ir::Value* v, int64_t max_elements = int64_t{1} << 22);

// The integers of a 0-D or 1-D static integer value with every element known (Slice starts, shapes).
std::optional<std::vector<int64_t>> static_ints(const ir::Value* v);

}  // namespace sdx::opt
