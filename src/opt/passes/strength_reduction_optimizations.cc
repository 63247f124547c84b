// StrengthReductionOptimizations (pass 8): replaces an expensive op by a cheaper equivalent.
//
//   Pow(x, 2)   -> Mul(x, x)
//   Pow(x, 0.5) -> Sqrt(x)
//   Pow(x, -1)  -> Reciprocal(x)
//   Div(x, c)   -> Mul(x, 1/c)     c a float32/float64 constant, 1/c computed once by the Reciprocal kernel
//   MatMul(Cast(Equal(x, arange(N))), W) -> Gather(W', Clip(ReduceMax(x, -1), -1, N))
//                                  a one-hot encoding times a constant W [N, D] (JAX's one_hot then a Dense
//                                  layer: magika): the rows of W the indices select, W' = W with a zero
//                                  row appended for indices outside [0, N) (no 1 in their one-hot row)
//
// For float x only (float16, bfloat16, float, double; Div: float and double), with the exponent a
// constant equal everywhere to 2, 0.5 or -1 that broadcasts into x without changing its shape.
//
// Tolerance:
//  - x * x is bitwise pow(x, 2) (the Pow kernel computes in double; x^2 of a float is exact there,
//    so both round the exact square once).
//  - sqrt(x), 1/x agree with pow(x, 0.5), pow(x, -1) to 1 ulp, except pow(-0, 0.5) = +0 (Sqrt: -0)
//    and pow(-inf, 0.5) = +inf (Sqrt: NaN).
//  - x * (1/c) differs from x / c by at most 1.5 ulp (two roundings instead of one; relative error
//    <= 2^-23 * 1.5 for float32), exactly equal when c is a power of two. Only done when every
//    element of c is finite and non-zero and 1/c is finite and normal in c's type (so x * (1/c)
//    overflows and underflows where x / c does, up to the last ulp). float16/bfloat16 are left
//    alone: rounding 1/c to 11 or 8 bits would cost up to 1e-3 relative error.
// - the one-hot product: each output is W[x, d] plus zeros (or only zeros), so the values are W's
//   exactly; only the sign of a zero may differ. Only done when W is finite (0 * inf would be NaN).
//   x is an int32/int64 tensor constant along its last axis (a last dim of 1, or an Expand of one: its
//   max over that axis is its value) and the constant an int32/int64 [1, ..., 1, N] holding 0 .. N-1;
//   Equal and Cast have no other reader.
// Pow(x, 3) -> x * x * x is not done: it rounds twice, and GELU fusion matches Pow(x, 3).
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_values.h"
#include "opt/algebra_util.h"
#include "opt/constant_eval.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Pow(x, c): float x, c uniformly `exponent` and broadcasting into x without changing its shape.
bool pow_of(const ir::Node& n, double exponent) {
  if (!uses_numpy_broadcast(n) || n.num_inputs() != 2 || !n.input(0) || constant_value(n.input(0))) return false;
  const Tensor* c = constant_value(n.input(1));
  auto u = uniform_constant(n.input(1));
  const DType t = elem_type(n.input(0));
  return c && u && *u == exponent && is_float(t) && t == elem_type(n.output(0)) &&
         broadcasts_into(c->shape().dims(), n.input(0));
}

// 1/c when c is float32/float64 with every element finite and non-zero and every reciprocal finite
// and normal.
std::optional<Tensor> safe_reciprocal(const Tensor& c) {
  if ((c.dtype() != DType::kFloat32 && c.dtype() != DType::kFloat64) || c.numel() == 0) return std::nullopt;
  auto r = evaluate_op("Reciprocal", {c});
  if (!r.is_ok()) return std::nullopt;
  auto vals = read_doubles(*r, "reciprocal");
  if (!vals.is_ok()) return std::nullopt;
  const double min_normal = c.dtype() == DType::kFloat32 ? 1.17549435e-38 : 2.2250738585072014e-308;
  for (double v : *vals)
    if (!std::isfinite(v) || std::fabs(v) < min_normal) return std::nullopt;
  return std::move(r).value();
}

// The one-hot product MatMul(Cast(Equal(x, arange)), W) around MatMul n, or nothing.
struct OneHotProduct {
  ir::Node* equal = nullptr;
  ir::Node* cast = nullptr;
  ir::Value* x = nullptr;  // the indices, [..., 1]
  int64_t classes = 0;     // N
};

std::optional<OneHotProduct> one_hot_product(const ir::Graph& g, const ir::Node& n) {
  if (n.num_inputs() != 2 || !n.input(0) || !n.input(1)) return std::nullopt;
  const Tensor* w = constant_value(n.input(1));
  ir::Node* cast = producer_of(n.input(0), "Cast");
  if (!w || w->shape().rank() != 2 || !cast || !has_single_use(g, cast->output(0))) return std::nullopt;
  if (elem_type(cast->output(0)) != w->dtype() || !is_float(w->dtype())) return std::nullopt;
  ir::Node* eq = cast->num_inputs() == 1 ? producer_of(cast->input(0), "Equal") : nullptr;
  if (!eq || eq->num_inputs() != 2 || !has_single_use(g, eq->output(0))) return std::nullopt;
  const int64_t N = w->shape()[0];
  for (int side = 0; side < 2; ++side) {
    const Tensor* r = constant_value(eq->input(side));
    ir::Value* x = eq->input(1 - side);
    if (!r || !x || constant_value(x) || (r->dtype() != DType::kInt32 && r->dtype() != DType::kInt64)) continue;
    if (elem_type(x) != r->dtype() || r->numel() != N || r->shape().rank() < 1 || r->shape().dims().back() != N)
      continue;
    // x's values must not vary along its last axis: a last dim of 1, or an Expand of such a tensor
    // (jax's one_hot broadcasts the indices before comparing).
    const std::optional<int> rank = static_rank(x);
    if (!rank || *rank < 2 || *rank < r->shape().rank()) continue;
    ir::Node* expand = producer_of(x, "Expand");
    const ir::Value* y = expand ? expand->input(0) : x;
    const std::optional<int> y_rank = y ? static_rank(y) : std::nullopt;
    if (!y_rank || *y_rank < 1 || fixed_dim(y, *y_rank - 1) != 1) continue;
    auto vals = read_int64s(*r, "classes");
    if (!vals.is_ok()) continue;
    bool arange = true;
    for (int64_t i = 0; i < N; ++i) arange = arange && (*vals)[static_cast<size_t>(i)] == i;
    if (!arange) continue;
    auto finite = read_doubles(*w, "W");
    if (!finite.is_ok()) return std::nullopt;
    for (double v : *finite)
      if (!std::isfinite(v)) return std::nullopt;
    return OneHotProduct{eq, cast, x, N};
  }
  return std::nullopt;
}

// W with a zero row appended: [N + 1, D].
Tensor with_zero_row(const Tensor& w) {
  const int64_t N = w.shape()[0], D = w.shape()[1];
  Tensor out = Tensor::allocate(w.dtype(), Shape{N + 1, D}).value();
  const size_t row = dtype_storage_bytes(w.dtype(), D);
  std::memcpy(out.raw_data(), w.raw_data(), row * static_cast<size_t>(N));
  std::memset(static_cast<char*>(out.raw_data()) + row * static_cast<size_t>(N), 0, row);
  return out;
}

// A new node op(inputs) in g, named after `base`, with its one output.
ir::Value* add_op(ir::Graph& g, const std::string& op, const std::string& base, int opset,
                  const std::vector<ir::Value*>& inputs) {
  const std::string name = g.unique_name(base);
  ir::Node* node = g.add_node(op, "", name, inputs, {g.unique_name(name + "_out")});
  node->set_opset(opset);
  return node->output(0);
}

// An int32/int64 scalar constant of x's element type.
ir::Value* index_constant(ir::Graph& g, const std::string& prefix, DType t, int64_t v) {
  Tensor c = Tensor::allocate(t, Shape{}).value();
  if (t == DType::kInt32) c.data<int32_t>()[0] = static_cast<int32_t>(v);
  else c.data<int64_t>()[0] = v;
  return g.add_constant(prefix, std::move(c));
}

class StrengthReductionOptimizations final : public PatternPass {
 public:
  StrengthReductionOptimizations() {
    struct PowRule {
      double exponent;
      const char* op;
      const char* what;
    };
    for (const PowRule& r :
         {PowRule{2.0, "Mul", "Pow(x, 2) -> Mul(x, x)"}, PowRule{0.5, "Sqrt", "Pow(x, 0.5) -> Sqrt(x)"},
          PowRule{-1.0, "Reciprocal", "Pow(x, -1) -> Reciprocal(x)"}}) {
      add_rule(
          {r.what, {"Pow"}, [r](ir::Graph& g, ir::Node& n, PassContext& ctx) {
             if (!pow_of(n, r.exponent)) return false;
             ir::Value* x = n.input(0);
             const std::string op = r.op;
             fuse(g, {&n}, &n, op, "", 0, op == "Mul" ? std::vector<ir::Value*>{x, x} : std::vector<ir::Value*>{x}, {});
             return ctx.applied(n, r.what);
           }});
    }
    add_rule({"Div(x, c) -> Mul(x, 1/c)", {"Div"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                if (!uses_numpy_broadcast(n) || n.num_inputs() != 2 || !n.input(0)) return false;
                ir::Value* x = n.input(0);
                const Tensor* c = constant_value(n.input(1));
                if (!c || constant_value(x) || elem_type(x) != c->dtype() || elem_type(n.output(0)) != c->dtype())
                  return false;
                auto r = safe_reciprocal(*c);
                if (!r) return false;
                ir::Value* rv = g.add_constant(n.input(1)->name() + "_reciprocal", std::move(*r));
                fuse(g, {&n}, &n, "Mul", "", 0, {x, rv}, {});
                return ctx.applied(n, "Div(x, c) -> Mul(x, 1/c)");
              }});
    add_rule({"MatMul(Cast(Equal(x, arange)), W) -> Gather", {"MatMul"}, [](ir::Graph& g, ir::Node& n, PassContext& ctx) {
                auto m = one_hot_product(g, n);
                if (!m) return false;
                const std::string base = n.name().empty() ? "one_hot" : n.name();
                const DType it = elem_type(m->x);
                ir::Value* idx = add_op(g, "ReduceMax", base + "/indices", 13, {m->x});
                idx->producer()->add_attribute(attr_ints("axes", {-1}));
                idx->producer()->add_attribute(attr_int("keepdims", 0));
                // Indices outside [0, N) select the zero row N (-1 wraps to it).
                idx = add_op(g, "Clip", base + "/clamped", 13,
                             {idx, index_constant(g, base + "/low", it, -1), index_constant(g, base + "/high", it, m->classes)});
                ir::Value* w = g.add_constant(n.input(1)->name() + "_zero_row", with_zero_row(*constant_value(n.input(1))));
                fuse(g, {m->equal, m->cast, &n}, &n, "Gather", "", 13, {w, idx}, {attr_int("axis", 0)});
                return ctx.applied(n, "MatMul(Cast(Equal(x, arange(" + std::to_string(m->classes) +
                                          "))), W) -> Gather(W, x)");
              }});
  }
  const char* name() const override { return "StrengthReductionOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("reduce_strength", [] { return std::make_unique<StrengthReductionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
