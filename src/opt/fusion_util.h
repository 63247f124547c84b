// Matching helpers shared by the fusion passes (activation, normalization, gated linear unit,
// linear and conv epilogue fusion): element types, operands of commutative binary ops, scalar
// constants that cannot change a result's shape by broadcasting, reduce axes across opsets, the
// activation an ONNX node computes (as the sdx fused ops' epilogue attributes), and building
// float constants of a value's element type.
//
//   ir::Node* add = producer_of(v, "Add");
//   if (auto [other, c] = scalar_operand(add); other && c && *c == 1.0) ...   // Add(other, 1)
//   if (auto act = epilogue_activation(*user)) attrs = act->attributes();    // Relu -> "relu"
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {

// v's rank when known.
std::optional<int> rank_of(const ir::Value* v);

// For a two-input node, the input that is not `v` (the second one when both are v), or null
// when v is not an input.
ir::Value* other_input(const ir::Node* n, const ir::Value* v);

// A one-element constant of x's element type of rank 0, or of rank at most x's (known) rank, so that an
// element-wise op of x and c has exactly x's shape and type. Its value as a double.
std::optional<double> scalar_like(const ir::Value* c, const ir::Value* x);

// For a two-input node with one operand a scalar_like constant (relative to the other), the
// other operand and the constant's value; {null, nullopt} otherwise. When both qualify the
// second input is taken as the constant.
std::pair<ir::Value*, std::optional<double>> scalar_operand(const ir::Node* n);

// |a - b| <= rel * |b|.
bool near(double a, double b, double rel);

// The axes a ReduceMean/ReduceSum node reduces over (attribute before opset 18, constant
// input from 18), when known and keepdims is 1; nullopt otherwise (also for no axes: all).
std::optional<std::vector<int64_t>> reduce_axes_keepdims(const ir::Node& reduce);
// True when `axes` is exactly the last axis of a rank-`rank` tensor ([-1] or [rank - 1];
// rank < 0: unknown rank, then only [-1]).
bool is_last_axis(const std::vector<int64_t>& axes, int rank);

// The activation an ONNX node computes, in the form the sdx fused ops take it: the ONNX ops of the
// activation table (ir/activation_defs.inc), Clip only with constant bounds that floats hold exactly.
// nullopt for anything else.
struct EpilogueActivation {
  std::string name;
  std::vector<float> params;
  std::vector<float> clamp;   // [lo, hi] applied after it, or empty (match_epilogue's allow_clamp)
  std::vector<float> affine;  // [scale, shift] applied after it, or empty (match_epilogue's allow_affine)
  // activation (+ activation_params, activation_clamp, activation_affine)
  std::vector<ir::Attribute> attributes() const;
};
std::optional<EpilogueActivation> epilogue_activation(const ir::Node& n);

// The single reader of v (v not a graph output), or null.
ir::Node* only_reader(const ir::Graph& g, const ir::Value* v);

// What follows a producer (MatMul, Conv) that a fused op can apply as its epilogue: an optional Add
// of a constant that broadcasts along `axis` of the rank-`rank` result (n values), then an optional
// activation, each the single reader of the value before it.
struct Epilogue {
  std::vector<ir::Node*> chain;  // the producer, then the matched nodes
  ir::Node* last = nullptr;      // the node whose outputs the fused op takes over
  std::optional<std::vector<double>> bias;
  ir::Value* bias_operand = nullptr;  // the Add's constant operand (when bias is set)
  std::optional<EpilogueActivation> activation;
  std::string what;  // "Relu(Add(MatMul(X, W), b))", for the rewrite log
};
// allow_bias false: only an activation is matched. allow_clamp (float32 / float64 only): after a Relu
// or LeakyRelu, also a Max or Min with a scalar constant or a Clip with constant bounds (the fused
// op's activation_clamp, backend/cpu/kernels/util/activation.h's ClampedOp), when it computes the
// same bits: the constant must not come first unless it is nonzero (Max(0, -0) is +0, the clamp
// -0), and a float must hold it exactly. allow_affine (float32 / float64 only): after a HardSwish or
// Relu without a clamp, also a Mul by a scalar constant and / or an Add of one (the fused op's
// activation_affine, activation.h's AffineOp: PP-LCNetV3's learnable affine block), a float holding
// each exactly.
Epilogue match_epilogue(const ir::Graph& g, ir::Node& producer, const std::string& producer_what, bool allow_bias,
                        int rank, int axis, int64_t n, DType dt, bool allow_clamp = false, bool allow_affine = false);

// A tensor of element type `dtype` (a float type) and shape `shape` holding `values`
// (rounded to the type).
Tensor float_tensor(DType dtype, const Shape& shape, const std::vector<double>& values);
// The values of a float constant as doubles (empty when not a float tensor).
std::vector<double> float_values(const Tensor& t);

// The value reaching n's input i when it is a constant whose shape, right-aligned with a
// rank-`rank` result, is 1 everywhere except possibly at `axis` (a non-negative axis of the
// result), where it is `size` or 1; and whose rank is at most `rank`. Returns its values
// expanded to `size` elements (a per-channel / per-feature vector), or nullopt.
std::optional<std::vector<double>> per_axis_constant(const ir::Value* c, int rank, int axis, int64_t size, DType dtype);

}  // namespace sdx::opt
