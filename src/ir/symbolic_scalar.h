// Shape arithmetic on symbolic dims: the value of a scalar integer that a graph computes from its input
// shapes (Shape -> Gather -> Add, as exporters write a decoder's sequence lengths), as a Dim, so that shape
// inference can size what such values shape (Range's length: a causal mask's rows and columns).
//
//   past  = Gather(Shape(past_key_values.0.key), 2)   -> Dim "past_sequence_length"
//   total = Add(past, Gather(Shape(input_ids), 1))     -> Dim "past_sequence_length + sequence_length"
//   Range(past, total, 1)                              -> length "sequence_length"
//
// A sum of symbols is spelled "a + b", as exporters name such dims (Optimum's present.N.key is
// [batch_size, heads, "past_sequence_length + sequence_length", head_dim]), so the dims computed here meet
// the dims models declare. Conservative: anything it cannot follow gives nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace sdx::ir {

// The value of v when it is a scalar (or one-element) integer that follows from constants and dims of
// tensors with known shapes, through Constant, Shape, Gather, Squeeze, Unsqueeze, Identity, Cast, Add and
// Sub. A Sub whose result cannot be spelled (a - b where a is not "... + b") is nullopt.
std::optional<Dim> symbolic_scalar(const Value* v);

// symbolic_vector's elements: an integer (Dim::value, negative ones included, param empty), a symbol (param),
// or unknown (value kUnknownInt, param empty).
inline constexpr int64_t kUnknownInt = INT64_MIN;
inline bool is_int(const Dim& d) { return d.param.empty() && d.value != kUnknownInt; }

// The elements of v when it is a 1-D (or scalar) integer that follows from constants and dims of tensors with
// known shapes: Shape(x) (its dims, unknown ones kUnknownInt), Constant, Concat, Gather and Slice of such vectors,
// Unsqueeze / Squeeze of a scalar, Identity, Cast. A Reshape's target computed from its input's shape
// (Shape -> Gather -> Unsqueeze -> Concat, as exporters write it) is [batch_size, sequence_length, 12, 64].
std::optional<std::vector<Dim>> symbolic_vector(const Value* v);

// a + b and a - b on dims (fixed arithmetic when both are fixed; see above for symbols).
std::optional<Dim> add_dims(const Dim& a, const Dim& b);
std::optional<Dim> sub_dims(const Dim& a, const Dim& b);

}  // namespace sdx::ir
