// Static shape inference rules: reusable ShapeInferenceFn builders that OpSchemas
// register with .infer_shape(...), plus the helpers they are built from.
//
//   SDX_OP_SCHEMA(Add)...infer(infer_same_as_input(0)).infer_shape(shape_broadcast());
//   SDX_OP_SCHEMA(Conv)...infer_shape(shape_conv_pool(ConvPoolKind::kConv));
//
// Invariants every rule keeps:
//  - Conservative: a rule that lacks information (unknown rank, non-constant shape
//    input, unusual attribute) leaves the output shape unknown; a dim it cannot
//    determine is left unknown (Dim{}, printed "?"). Runtime learns the rest.
//  - Only a definite contradiction between FIXED dims is an error (Add of [3] and
//    [4]); the message names the node and the shapes.
//  - A shape already present on an output (declared by the model) is never replaced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "ir/op_schema.h"

namespace sdx::ir {

using Dims = std::vector<Dim>;

// --- helpers ---------------------------------------------------------------

// The known-rank shape of input i, or nullptr (omitted input, not a tensor, unknown rank).
const Dims* input_dims(const Node& node, int i);
// Sets output o's shape when the output exists, is a tensor and has no shape yet.
void set_output_dims(Node& node, int o, Dims dims);
// The values of input i when it is a constant integer tensor (int64 or int32): an
// initializer that is not also a graph input, or the output of a Constant node.
std::optional<std::vector<int64_t>> constant_ints_input(const Node& node, int i);
// "[batch, 3]" for error messages.
std::string dims_string(const Dims& d);
// Numpy broadcasting of two shapes; fails only on two fixed dims that differ and are not 1.
Result<Dims> broadcast_dims(const Dims& a, const Dims& b);

// --- rules -----------------------------------------------------------------

// Every output gets the shape of input i (unary element-wise ops, Cast, Softmax, ...).
ShapeInferenceFn shape_same_as_input(int input_index);
// Only output `output_index` gets the shape of input `input_index` (Dropout, LayerNormalization).
ShapeInferenceFn shape_output_same_as_input(int output_index, int input_index);
// LayerNormalization: Y like X; Mean and InvStdDev are X's dims before `axis`, then 1s.
Status shape_layer_norm(Node& node);
// Output 0 = numpy broadcast of all present inputs (binary/variadic ops, Where).
// Opset < 7 used the legacy "broadcast" attribute: output takes input 0's shape.
ShapeInferenceFn shape_broadcast();
// Reduce*: axes from the attribute or a constant second input; keepdims; noop_with_empty_axes.
ShapeInferenceFn shape_reduce();
// ArgMax/ArgMin: single axis attribute, keepdims.
ShapeInferenceFn shape_arg_reduce();

enum class ConvPoolKind { kConv, kPool, kGlobalPool };
// Conv / MaxPool / AveragePool / LpPool / Global*Pool: [N, C|M, spatial...].
ShapeInferenceFn shape_conv_pool(ConvPoolKind kind);

// sdx.Attention / sdx.PagedAttention: Y = Q's [B, H, S] (input 0) followed by V's last dim (input 2).
Status shape_attention(Node& node);

// Shape-manipulation ops (rules in shape_inference.cc).
Status shape_matmul(Node& node);
Status shape_gemm(Node& node);
Status shape_transpose(Node& node);
Status shape_reshape(Node& node);
Status shape_flatten(Node& node);
Status shape_squeeze(Node& node);
Status shape_unsqueeze(Node& node);
Status shape_concat(Node& node);
Status shape_gather(Node& node);
Status shape_shape(Node& node);
Status shape_size(Node& node);
Status shape_expand(Node& node);
Status shape_slice(Node& node);
Status shape_split(Node& node);
Status shape_constant(Node& node);
// Range: [ceil((limit - start) / delta)] when start, limit and delta follow from constants and dims
// (ir/symbolic_scalar.h); symbolic for delta 1 (limit "p + q" from start "p": length "q").
Status shape_range(Node& node);

}  // namespace sdx::ir
