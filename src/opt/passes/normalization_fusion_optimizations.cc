// NormalizationFusionOptimizations (pass 19, fusion): normalizations written out as reductions
// and arithmetic become one normalization op, and inference BatchNormalization after a linear
// op is folded into that op's weights. Mul/Add operands match in either order; every
// intermediate value must be read only inside the pattern (only_used_within).
//
//   LayerNorm (PyTorch/TF/Paddle exports before opset 17), over the last axis only:
//     M = ReduceMean(x, axes=[-1] or [rank-1], keepdims=1)   (axes attribute, or constant input from opset 18)
//     D = Sub(x, M);  V = ReduceMean(Pow(D, 2) | Mul(D, D), same axes);  S = Sqrt(Add(V, eps))
//     N = Div(D, S) | Mul(D, Reciprocal(S));  [Y = Mul(N, gamma)];  [Y = Add(Y, beta)]
//       -> LayerNormalization(x, gamma or ones, beta?, axis=-1, epsilon=eps) (opset 17)
//   RMSNorm (HF Llama/T5 exports):
//     S = Sqrt(Add(ReduceMean(Pow(x, 2) | Mul(x, x), last axis), eps))
//     N = Div(x, S) | Mul(x, Reciprocal(S)) | Mul(x, Div(1, S));  [Y = Mul(N, gamma)]
//       -> RMSNormalization(x, gamma or ones, axis=-1, epsilon=eps) (opset 23)
//   gamma / beta: x's type; a constant whose shape is 1s then N (N: x's static last dim) or one
//   element (expanded to [N]), or any value of static shape [N]. x's last dim must be static, or
//   gamma a constant with N > 1 values along its last axis (then N is taken from it); when x's rank
//   is unknown, gamma and beta must have rank <= 1.
//   eps: one element of x's type, rank <= x's.
//
//   BatchNormalization (inference: one output, training_mode 0, opset >= 9; scale, B, mean and
//   var constants of shape [C]) folded with s = scale / sqrt(var + epsilon), in double:
//     BN(Conv(x, W, b?))           -> Conv(x, W * s[m], (b - mean) * s + B)   (W, b constants)
//     BN(Gemm(a, W, c?))           -> Gemm(a, W * s[n], (beta c - mean) * s + B, beta=1)
//                                     (W, c constants; c absent, one element, [N] or [1, N])
//     BN(MatMul(x, W)) / BN(Add(MatMul(x, W), b))  (x rank 2, W constant [K, N], b constant [N] / [1, N])
//                                  -> Add(MatMul(x, W * s[n]), (b - mean) * s + B)
//   Only float32/float64 weights (the folding is computed in double and rounded once).
//
//   A BatchNormalization exported as Mul and Add (Paddle's PP-OCR models), s and t constants per
//   output channel ([1, M, 1, 1], [M, 1, 1] or one element):
//     Mul(Conv(x, W, b?), s)       -> Conv(x, W * s[m], b * s[m])
//     Add(Conv(x, W, b?), t)       -> Conv(x, W, b + t[m])           (so Add(Mul(Conv)) folds twice)
//
// Numerics: the fused normalizations compute their statistics in double (the kernels in
// backend/cpu/kernels/norm_layer.cc) where the unfused graph rounds every step to x's type, and
// folding rounds W * s once; results agree within float rounding (tests: rtol 1e-5, atol 1e-5).
#include <cmath>

#include "opt/fusion_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

using Match = std::vector<ir::Node*>;

// ReduceMean(v) over the last axis with keepdims; the node, or null.
ir::Node* mean_over_last_axis(ir::Value* v) {
  ir::Node* r = producer_of(v, "ReduceMean");
  if (!r) return nullptr;
  auto axes = reduce_axes_keepdims(*r);
  auto rank = rank_of(r->input(0));
  if (!axes || !is_last_axis(*axes, rank ? *rank : -1)) return nullptr;
  return r;
}

// Pow(d, 2) or Mul(d, d); the node, or null.
ir::Node* square_of(ir::Value* v, ir::Value* d) {
  if (ir::Node* p = producer_of(v, "Pow")) {
    auto e = scalar_like(p->input(1), d);
    return p->input(0) == d && e && *e == 2.0 ? p : nullptr;
  }
  ir::Node* m = producer_of(v, "Mul");
  return m && m->input(0) == d && m->input(1) == d ? m : nullptr;
}

// S = Sqrt(Add(V, eps)); appends Sqrt and Add, returns V (and eps), or null.
ir::Value* sqrt_plus_eps(ir::Value* s, Match& m, double* eps) {
  ir::Node* sq = producer_of(s, "Sqrt");
  if (!sq) return nullptr;
  ir::Node* add = producer_of(sq->input(0), "Add");
  if (!add) return nullptr;
  auto [v, e] = scalar_operand(add);
  if (!v || !e || *e < 0) return nullptr;
  m.insert(m.end(), {sq, add});
  *eps = *e;
  return v;
}

// N = num / S in the forms Div(num, S), Mul(num, Reciprocal(S)), Mul(num, Div(1, S)) anchored at
// n; returns S (with `num` set) and appends the reciprocal node, or null.
ir::Value* divided_by(ir::Node& n, ir::Value** num, Match& m) {
  if (n.op_type() == "Div") {
    *num = n.input(0);
    return n.input(1);
  }
  if (n.op_type() != "Mul") return nullptr;
  for (int i = 0; i < 2; ++i) {
    ir::Value* r = n.input(i);
    if (ir::Node* rec = producer_of(r, "Reciprocal")) {
      *num = n.input(1 - i);
      m.push_back(rec);
      return rec->input(0);
    }
    if (ir::Node* div = producer_of(r, "Div")) {
      auto one = scalar_like(div->input(0), div->input(1));
      if (one && *one == 1.0) {
        *num = n.input(1 - i);
        m.push_back(div);
        return div->input(1);
      }
    }
  }
  return nullptr;
}

// The affine step after `v` (its only reader): a Mul (gamma) or Add (beta) whose other operand is
// a constant broadcasting only along the last axis (values expanded to [n]), or a non-constant of
// static shape [n].
struct Affine {
  ir::Node* node = nullptr;
  ir::Value* value = nullptr;                 // an operand of shape [n], used as is
  std::optional<std::vector<double>> values;  // a constant operand's values as [n]
  // The fused op's input (a new constant for a constant operand).
  ir::Value* input(ir::Graph& g, DType dt, int64_t n, const char* prefix) const {
    return value ? value : g.add_constant(prefix, float_tensor(dt, Shape{n}, *values));
  }
};
Affine affine_after(const ir::Graph& g, ir::Value* v, const char* op, int rank, int64_t n) {
  if (!has_single_use(g, v)) return {};
  ir::Node* u = v->users()[0];
  if (u->op_type() != op || !u->domain().empty() || u->num_inputs() != 2) return {};
  ir::Value* p = other_input(u, v);
  if (!p || p == v || elem_type(p) != elem_type(v)) return {};
  Affine a;
  if (const Tensor* t = constant_value(p)) {
    a.values = per_axis_constant(p, rank, rank - 1, n, elem_type(v));
    if (!a.values) return {};
    if (t->shape() == Shape{n}) a.value = p;  // already [n]: used as is
  } else {
    auto s = static_shape(p);
    if (!s || *s != std::vector<int64_t>{n}) return {};
    a.value = p;
  }
  a.node = u;
  return a;
}

// Shared tail of both norms: gamma (and beta for LayerNorm) after N, then the fused node.
bool finish_norm(ir::Graph& g, ir::Node& anchor, Match m, ir::Value* x, double eps, bool rms, PassContext& ctx) {
  const DType dt = elem_type(x);
  auto xs = x->type().shape;
  if (!is_float(dt) || (xs && xs->empty())) return false;
  // x of unknown rank (after a Reshape to a computed shape): gamma and beta of rank <= 1 only, which
  // never add dims when they broadcast.
  const int rank = xs ? static_cast<int>(xs->size()) : 1;
  int64_t n = xs && xs->back().is_fixed() ? xs->back().value : 0;
  if (n == 0) {
    // A last dim shape inference could not fix: the gamma constant's, when it has more than one
    // value along its last axis. x's last dim is then that n (the graph broadcasts gamma against
    // it) unless it is 1, a one-element normalization, where the fused op refuses the scale's length
    // at run time rather than compute something else.
    if (!has_single_use(g, anchor.output(0))) return false;
    ir::Node* u = anchor.output(0)->users()[0];
    const Tensor* t = u->op_type() == "Mul" && u->domain().empty() && u->num_inputs() == 2
                          ? constant_value(other_input(u, anchor.output(0)))
                          : nullptr;
    if (!t || t->rank() < 1 || t->rank() > rank || t->shape()[t->rank() - 1] <= 1) return false;
    n = t->shape()[t->rank() - 1];
  }
  ir::Node* last = &anchor;
  m.push_back(&anchor);
  Affine gamma = affine_after(g, anchor.output(0), "Mul", rank, n);
  Affine beta;
  if (gamma.node) {
    m.push_back(gamma.node);
    last = gamma.node;
    if (!rms) beta = affine_after(g, gamma.node->output(0), "Add", rank, n);
    if (beta.node) {
      m.push_back(beta.node);
      last = beta.node;
    }
  }
  if (!only_used_within(g, m, last) || elem_type(last->output(0)) != dt) return false;
  std::vector<ir::Value*> inputs = {x};
  inputs.push_back(gamma.node ? gamma.input(g, dt, n, "scale")
                              : g.add_constant("ones", float_tensor(dt, Shape{n},
                                                                    std::vector<double>(static_cast<size_t>(n), 1.0))));
  if (beta.node) inputs.push_back(beta.input(g, dt, n, "bias"));
  fuse(g, m, last, rms ? "RMSNormalization" : "LayerNormalization", "", rms ? 23 : 17, inputs,
       {attr_int("axis", -1), attr_float("epsilon", static_cast<float>(eps))});
  std::string what = rms ? "x / Sqrt(ReduceMean(x^2) + eps)" : "(x - mean) / Sqrt(ReduceMean((x - mean)^2) + eps)";
  if (gamma.node) what += " * gamma";
  if (beta.node) what += " + beta";
  return ctx.applied(anchor, what + (rms ? " -> RMSNormalization" : " -> LayerNormalization"));
}

bool fuse_layer_norm(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  Match m;
  ir::Value* d = nullptr;
  ir::Value* s = divided_by(n, &d, m);
  ir::Node* sub = producer_of(d, "Sub");
  if (!s || !sub) return false;
  ir::Value* x = sub->input(0);
  ir::Node* mean = mean_over_last_axis(sub->input(1));
  if (!mean || mean->input(0) != x) return false;
  double eps = 0;
  ir::Node* var = mean_over_last_axis(sqrt_plus_eps(s, m, &eps));
  if (!var) return false;
  ir::Node* sq = square_of(var->input(0), d);
  if (!sq) return false;
  m.insert(m.end(), {sub, mean, var, sq});
  return finish_norm(g, n, m, x, eps, false, ctx);
}

bool fuse_rms_norm(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  Match m;
  ir::Value* x = nullptr;
  ir::Value* s = divided_by(n, &x, m);
  if (!s) return false;
  double eps = 0;
  ir::Node* ms = mean_over_last_axis(sqrt_plus_eps(s, m, &eps));
  if (!ms) return false;
  ir::Node* sq = square_of(ms->input(0), x);
  if (!sq) return false;
  m.insert(m.end(), {ms, sq});
  return finish_norm(g, n, m, x, eps, true, ctx);
}

// ---- BatchNormalization folding ----------------------------------------------------------------

// Per-channel s = scale / sqrt(var + eps) and t = B - mean * s of an inference BN, or nullopt.
struct BnFold {
  std::vector<double> s, mean, bias;
};
std::optional<BnFold> bn_fold(const ir::Graph& g, const ir::Node& bn) {
  if (bn.opset() < 9 || bn.num_inputs() != 5 || bn.attr_int("training_mode", 0) != 0) return std::nullopt;
  for (int i = 1; i < bn.num_outputs(); ++i)
    if (bn.output(i) && (!bn.output(i)->users().empty() || g.is_output(bn.output(i)))) return std::nullopt;
  const DType dt = elem_type(bn.input(0));
  if (dt != DType::kFloat32 && dt != DType::kFloat64) return std::nullopt;
  std::vector<double> v[4];
  for (int i = 0; i < 4; ++i) {
    const Tensor* t = constant_value(bn.input(i + 1));
    if (!t || t->rank() != 1 || t->dtype() != dt) return std::nullopt;
    v[i] = float_values(*t);
    if (v[i].size() != v[0].size()) return std::nullopt;
  }
  const double eps = bn.attr_float("epsilon", 1e-5f);
  BnFold f;
  for (size_t c = 0; c < v[0].size(); ++c) {
    f.s.push_back(v[0][c] / std::sqrt(v[3][c] + eps));
    f.mean.push_back(v[2][c]);
    f.bias.push_back(v[1][c]);
  }
  return f;
}

// Replaces `nodes` (ending with the BN) by one node computing the BN's output 0.
ir::Node* replace_with(ir::Graph& g, const Match& nodes, ir::Node* bn, const std::string& op, int opset,
                       const std::vector<ir::Value*>& inputs, std::vector<ir::Attribute> attrs) {
  ir::Value* out = bn->output(0);
  const std::string name = bn->name().empty() ? g.unique_name(op) : bn->name();
  for (ir::Node* n : nodes) g.remove_node(n);
  ir::Node* f = g.add_node_with_outputs(op, "", name, inputs, {out});
  f->set_opset(opset);
  for (ir::Attribute& a : attrs) f->add_attribute(std::move(a));
  return f;
}

bool fold_bn_into_conv(ir::Graph& g, ir::Node& bn, PassContext& ctx) {
  ir::Node* conv = producer_of(bn.input(0), "Conv");
  if (!conv || !has_single_use(g, conv->output(0))) return false;
  auto f = bn_fold(g, bn);
  const Tensor* w = constant_value(conv->input(1));
  const DType dt = elem_type(bn.input(0));
  if (!f || !w || w->dtype() != dt || w->rank() < 3 || w->shape()[0] != static_cast<int64_t>(f->s.size())) return false;
  const int64_t mch = w->shape()[0];
  std::vector<double> b(static_cast<size_t>(mch), 0.0);
  if (conv->num_inputs() > 2 && conv->input(2)) {
    const Tensor* cb = constant_value(conv->input(2));
    if (!cb || cb->dtype() != dt || cb->numel() != mch) return false;
    b = float_values(*cb);
  }
  std::vector<double> wv = float_values(*w);
  const int64_t per = w->numel() / std::max<int64_t>(mch, 1);
  for (int64_t m = 0; m < mch; ++m) {
    for (int64_t k = 0; k < per; ++k) wv[static_cast<size_t>(m * per + k)] *= f->s[static_cast<size_t>(m)];
    const size_t i = static_cast<size_t>(m);
    b[i] = (b[i] - f->mean[i]) * f->s[i] + f->bias[i];
  }
  ir::Value* nw = g.add_constant(conv->input(1)->name() + "_bn", float_tensor(dt, w->shape(), wv));
  ir::Value* nb = g.add_constant(conv->name() + "_bn_bias", float_tensor(dt, Shape{mch}, b));
  replace_with(g, {conv, &bn}, &bn, "Conv", conv->opset(), {conv->input(0), nw, nb}, conv->attributes());
  return ctx.applied(bn, "BatchNormalization(Conv(x, W, b)) -> Conv(x, W * s, (b - mean) * s + B)");
}

bool fold_bn_into_gemm(ir::Graph& g, ir::Node& bn, PassContext& ctx) {
  ir::Node* gemm = producer_of(bn.input(0), "Gemm");
  if (!gemm || gemm->opset() < 7 || !has_single_use(g, gemm->output(0))) return false;
  auto f = bn_fold(g, bn);
  const Tensor* w = constant_value(gemm->input(1));
  const DType dt = elem_type(bn.input(0));
  if (!f || !w || w->dtype() != dt || w->rank() != 2) return false;
  const bool tb = gemm->attr_int("transB", 0) != 0;
  const int64_t n = tb ? w->shape()[0] : w->shape()[1];
  if (n != static_cast<int64_t>(f->s.size())) return false;
  const double beta = gemm->attr_float("beta", 1.f);
  std::vector<double> c(static_cast<size_t>(n), 0.0);
  if (gemm->num_inputs() > 2 && gemm->input(2)) {
    const Tensor* ct = constant_value(gemm->input(2));
    if (!ct || ct->dtype() != dt || ct->rank() > 2 || (ct->rank() == 2 && ct->shape()[0] != 1)) return false;
    auto cv = per_axis_constant(gemm->input(2), 2, 1, n, dt);
    if (!cv) return false;
    for (size_t j = 0; j < c.size(); ++j) c[j] = beta * (*cv)[j];
  }
  std::vector<double> wv = float_values(*w);
  const int64_t rows = w->shape()[0], cols = w->shape()[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) wv[static_cast<size_t>(r * cols + k)] *= f->s[static_cast<size_t>(tb ? r : k)];
  for (size_t j = 0; j < c.size(); ++j) c[j] = (c[j] - f->mean[j]) * f->s[j] + f->bias[j];
  ir::Value* nw = g.add_constant(gemm->input(1)->name() + "_bn", float_tensor(dt, w->shape(), wv));
  ir::Value* nc = g.add_constant(gemm->name() + "_bn_bias", float_tensor(dt, Shape{n}, c));
  std::vector<ir::Attribute> attrs;
  for (const ir::Attribute& a : gemm->attributes())
    if (a.name != "beta") attrs.push_back(a);
  attrs.push_back(attr_float("beta", 1.f));
  replace_with(g, {gemm, &bn}, &bn, "Gemm", gemm->opset(), {gemm->input(0), nw, nc}, attrs);
  return ctx.applied(bn, "BatchNormalization(Gemm(a, W, c)) -> Gemm(a, W * s, (beta c - mean) * s + B)");
}

bool fold_bn_into_matmul(ir::Graph& g, ir::Node& bn, PassContext& ctx) {
  Match m;
  ir::Value* in = bn.input(0);
  ir::Node* add = producer_of(in, "Add");
  ir::Value* bias = nullptr;
  if (add) {
    if (!has_single_use(g, in)) return false;
    m.push_back(add);
    for (int i = 0; i < 2 && !bias; ++i)
      if (producer_of(add->input(i), "MatMul") && constant_value(add->input(1 - i))) {
        bias = add->input(1 - i);
        in = add->input(i);
      }
    if (!bias) return false;
  }
  ir::Node* mm = producer_of(in, "MatMul");
  if (!mm || !has_single_use(g, in) || rank_of(mm->input(0)) != 2) return false;
  auto f = bn_fold(g, bn);
  const Tensor* w = constant_value(mm->input(1));
  const DType dt = elem_type(bn.input(0));
  if (!f || !w || w->dtype() != dt || w->rank() != 2 || w->shape()[1] != static_cast<int64_t>(f->s.size()))
    return false;
  const int64_t n = w->shape()[1];
  std::vector<double> b(static_cast<size_t>(n), 0.0);
  if (bias) {
    auto bv = per_axis_constant(bias, 2, 1, n, dt);
    if (!bv || constant_value(bias)->numel() != n) return false;
    b = *bv;
  }
  std::vector<double> wv = float_values(*w);
  for (int64_t k = 0; k < w->shape()[0]; ++k)
    for (int64_t j = 0; j < n; ++j) wv[static_cast<size_t>(k * n + j)] *= f->s[static_cast<size_t>(j)];
  for (size_t j = 0; j < b.size(); ++j) b[j] = (b[j] - f->mean[j]) * f->s[j] + f->bias[j];
  ir::Value* nw = g.add_constant(mm->input(1)->name() + "_bn", float_tensor(dt, w->shape(), wv));
  ir::Value* nb = g.add_constant(mm->name() + "_bn_bias", float_tensor(dt, Shape{n}, b));
  g.set_input(mm, 1, nw);
  m.push_back(&bn);
  replace_with(g, m, &bn, "Add", 14, {mm->output(0), nb}, {});
  return ctx.applied(bn, std::string("BatchNormalization(") + (add ? "Add(MatMul(x, W), b)" : "MatMul(x, W)") +
                             ") -> Add(MatMul(x, W * s), (b - mean) * s + B)");
}

// A per-output-channel constant of a convolution's output (rank r): its shape right-aligned to r
// dims is 1 everywhere but the channel axis, which is 1 or M. Its value per channel (M values), or
// nullopt.
std::optional<std::vector<double>> per_channel(const ir::Value* v, DType dt, int64_t r, int64_t M) {
  const Tensor* t = constant_value(v);
  if (!t || t->dtype() != dt || t->rank() > r) return std::nullopt;
  const int64_t lead = r - t->rank();
  int64_t channels = 1;
  for (int64_t d = 0; d < t->rank(); ++d) {
    const int64_t axis = lead + d, n = t->shape()[d];
    if (axis == 1 && (n == M || n == 1)) channels = n;
    else if (n != 1) return std::nullopt;
  }
  std::vector<double> vals = float_values(*t);
  if (channels == 1) vals.assign(static_cast<size_t>(M), vals.empty() ? 0.0 : vals[0]);
  return vals;
}

// Mul(Conv(x, W, b?), s) -> Conv(x, W * s[m], b * s[m]) and Add(Conv(x, W, b?), t) -> Conv(x, W, b + t[m]),
// s and t per output channel (a BatchNormalization exported as Mul and Add: Paddle's PP-OCR models).
bool fold_affine_into_conv(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  const bool mul = n.op_type() == "Mul";
  for (int i = 0; i < 2; ++i) {
    ir::Node* conv = producer_of(n.input(i), "Conv");
    if (!conv || !has_single_use(g, conv->output(0))) continue;
    const Tensor* w = constant_value(conv->input(1));
    const DType dt = elem_type(conv->output(0));
    if (!w || w->dtype() != dt || (dt != DType::kFloat32 && dt != DType::kFloat64) || w->rank() < 3) continue;
    const int64_t M = w->shape()[0];
    auto c = per_channel(n.input(1 - i), dt, w->rank(), M);
    if (!c) continue;
    std::vector<double> b(static_cast<size_t>(M), 0.0);
    if (conv->num_inputs() > 2 && conv->input(2)) {
      const Tensor* cb = constant_value(conv->input(2));
      if (!cb || cb->dtype() != dt || cb->numel() != M) continue;
      b = float_values(*cb);
    }
    ir::Value* nw = conv->input(1);
    if (mul) {
      std::vector<double> wv = float_values(*w);
      const int64_t per = w->numel() / std::max<int64_t>(M, 1);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < per; ++k) wv[static_cast<size_t>(m * per + k)] *= (*c)[static_cast<size_t>(m)];
        b[static_cast<size_t>(m)] *= (*c)[static_cast<size_t>(m)];
      }
      nw = g.add_constant(conv->input(1)->name() + "_scaled", float_tensor(dt, w->shape(), wv));
    } else {
      for (int64_t m = 0; m < M; ++m) b[static_cast<size_t>(m)] += (*c)[static_cast<size_t>(m)];
    }
    ir::Value* nb = g.add_constant(conv->name() + (mul ? "_scaled_bias" : "_shifted_bias"), float_tensor(dt, Shape{M}, b));
    replace_with(g, {conv, &n}, &n, "Conv", conv->opset(), {conv->input(0), nw, nb}, conv->attributes());
    return ctx.applied(n, mul ? "Mul(Conv(x, W, b), s) -> Conv(x, W * s, b * s)" : "Add(Conv(x, W, b), t) -> Conv(x, W, b + t)");
  }
  return false;
}

class NormalizationFusionOptimizations final : public PatternPass {
 public:
  NormalizationFusionOptimizations() {
    add_rule({"per-channel Mul / Add after Conv -> Conv", {"Mul", "Add"}, fold_affine_into_conv});
    add_rule({"decomposed LayerNorm -> LayerNormalization", {"Div", "Mul"}, fuse_layer_norm});
    add_rule({"decomposed RMSNorm -> RMSNormalization", {"Div", "Mul"}, fuse_rms_norm});
    add_rule({"BatchNormalization(Conv) -> Conv", {"BatchNormalization"}, fold_bn_into_conv});
    add_rule({"BatchNormalization(Gemm) -> Gemm", {"BatchNormalization"}, fold_bn_into_gemm});
    add_rule({"BatchNormalization(MatMul [+ b]) -> MatMul + b", {"BatchNormalization"}, fold_bn_into_matmul});
  }
  const char* name() const override { return "NormalizationFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fuse_normalizations", [] { return std::make_unique<NormalizationFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
