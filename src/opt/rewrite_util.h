// Helpers for writing rewrites: reading constants, walking producers and users,
// forwarding a node's output to another value, and replacing a matched pattern
// by one node that takes over the pattern's output values (and so their names).
//
//   if (auto c = scalar_constant(n.input(1)); c && *c == 0.0)   // Add(x, 0)
//     if (forward_output(g, &n, n.input(0))) ctx.applied(n, "Add(x, 0) -> x");
//
//   // LayerNorm: every node of the match goes, one node comes
//   if (only_used_within(match, last))
//     fuse(g, match, last, "LayerNormalization", "", 17, {x, scale, bias}, {attr_int("axis", -1), attr_float("epsilon", eps)});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace sdx::opt {

// The value of a constant (an initializer that is not a graph input, so callers cannot override
// it), or null.
const Tensor* constant_value(const ir::Value* v);
// A constant whose elements all equal one number (any numeric type), as a double.
std::optional<double> uniform_constant(const ir::Value* v);
// A one-element constant, as a double.
std::optional<double> scalar_constant(const ir::Value* v);

// v's producer when it is `op` of the default domain (or "domain:Op"), else null.
ir::Node* producer_of(const ir::Value* v, const std::string& op);
// v is read by exactly one node input and is not a graph output.
bool has_single_use(const ir::Graph& g, const ir::Value* v);
// Every output of every node in `nodes` other than `last` is read only by nodes in `nodes` and is
// not a graph output (so the whole set can be replaced by one node producing last's outputs).
bool only_used_within(const ir::Graph& g, const std::vector<ir::Node*>& nodes, const ir::Node* last);

// Makes n's single output read as `replacement` everywhere and removes n. False (nothing changed)
// when n's output is a graph output (its name must stay) or types differ in element type.
bool forward_output(ir::Graph& g, ir::Node* n, ir::Value* replacement);
// Removes `nodes` and adds one node computing `last`'s outputs from `inputs`. The new node's
// opset is `opset` (0: last's). Returns it.
ir::Node* fuse(ir::Graph& g, const std::vector<ir::Node*>& nodes, ir::Node* last, const std::string& op,
               const std::string& domain, int opset, const std::vector<ir::Value*>& inputs,
               std::vector<ir::Attribute> attrs);

ir::Attribute attr_int(const std::string& name, int64_t v);
ir::Attribute attr_float(const std::string& name, float v);
ir::Attribute attr_ints(const std::string& name, std::vector<int64_t> v);
ir::Attribute attr_string(const std::string& name, const std::string& v);

// Float32, float64, float16 or bfloat16: the types whose kernels compute IEEE arithmetic.
bool is_float(DType t);
// v's element type (kUndefined when unknown or not a tensor).
DType elem_type(const ir::Value* v);

// The static shape of a value when every dim is fixed.
std::optional<std::vector<int64_t>> static_shape(const ir::Value* v);
// The rank of a tensor value when known (symbolic dims allowed).
std::optional<int> static_rank(const ir::Value* v);
// Dim `axis` (already normalized) of v when it is fixed.
std::optional<int64_t> fixed_dim(const ir::Value* v, int axis);
// The values of an integer constant (any integer dtype), or nullopt.
std::optional<std::vector<int64_t>> constant_ints(const ir::Value* v);
// Same dtype, shape and element values (bytes; strings element by element).
bool same_tensor(const Tensor& a, const Tensor& b);
// Same name, type and value (floats compared bit by bit; graph attributes only when they are the same
// object; sparse tensors and type lists never).
bool same_attribute(const ir::Attribute& a, const ir::Attribute& b);
// Same set of attributes, in any order.
bool same_attributes(const ir::Node& a, const ir::Node& b);

}  // namespace sdx::opt
