// QuantizationOptimizations (pass 23): precision rewrites of weights and quantize/dequantize pairs.
//
// Lower-precision weights read directly by sdx.Linear, with OptimizerOptions::fp16 (SDX_OPTIMIZER_FP16=1)
// or OptimizerOptions::int8 (SDX_OPTIMIZER_INT8=1; int8 wins when both are on):
//   sdx.Linear(X, W, B?)                             -> sdx.Linear(X, W', B?, S?)    (same activation)
//   MatMul(X, W) [+ b] [-> Act]                      -> sdx.Linear(X, W', b?, S?, activation)
//   Gemm(A, B, C?) alpha = 1, transA = 0, A 2-D, C absent or beta = 1 and C a constant [N] / [1, N]
//                                                    -> sdx.Linear(A, W', C?, S?)  (transB: W = B^T)
//   X float32; W a float32 2-D constant [K, N] of >= kLowpMinElements elements, finite, read by that node
//   only (as its weight). fp16: W' = float16 W (round to nearest even; every |w| <= 65504), no S.
//   int8 (weight-only, symmetric, per output channel): S[n] = max_k |W[k, n]| / 127 (1 for a zero
//   column), W'[k, n] = round(W[k, n] / S[n]) in [-127, 127]; the kernel computes S[n] * sum_k x W'.
//   The sdx.Linear gets x_quant = "int16": X is rounded per row to 16-bit integers on every call
//   (relative error at most 2^-16 of the row's max |x|, far below the weights' rounding) and the
//   products are exact integer sums (quant/int8_w16_gemm.h). With OptimizerOptions::int8_dynamic
//   (SDX_OPTIMIZER_INT8=dynamic) it gets x_quant = "dynamic": X quantized to 8 bits per row instead
//   (quant/int8_dynamic_gemm.h), faster and less accurate.
//   The weight stays small in memory and the kernel widens it in registers: no per-call Cast (see
//   backend/cpu/kernels/fused_linear.cc). Results change by the rounding of the weights (float16:
//   relative 2^-11 per weight; int8: up to S[n] / 2 per weight), which is why both are opt-in. Each
//   weight is one reported rewrite.
//
// FP16 weight pre-casting of the remaining weights, only with OptimizerOptions::fp16:
//   MatMul(x, W) / Gemm(x, W, ...) / Conv(x, W, ...), W a float32 constant of >= kFp16MinElements
//   elements read only as input 1 of such nodes, every finite |w| <= 65504 (float16's largest)
//     -> W16 = float16 initializer (round to nearest even), W' = Cast(W16, to=FLOAT) placed before the
//        first reader, every reader reads W'; W's float32 data is dropped.
//   The weights are stored at half the size; the Cast runs on every call (a Conv, or a weight shared
//   by several nodes).
//
// Quantize/dequantize round trip, always:
//   QuantizeLinear(DequantizeLinear(q, s, z), s, z) -> q
//   with s and z the same constants in both (same tensor values; z absent in both or present in both),
//   the same axis and block_size, q of type int8/uint8/int16/uint16 equal to QuantizeLinear's output
//   type, s float32 with every |s| in [FLT_MIN, FLT_MAX / 2^18] and no precision/output_dtype
//   attributes. Exact: DequantizeLinear gives y = fl((q - z) * s) with |q - z| < 2^17; then
//   fl(y / s) = (q - z)(1 + d), |d| <= 2^-23, is within 2^-6 of the integer q - z, so rounding gives
//   it back and adding z lands in range without saturating.
//
// Gather from a dequantized constant table (an int8 embedding), always:
//   Gather(Mul(Cast(q), s), idx, axis=0)        -> Mul(Cast(Gather(q, idx)), Gather(s, idx))
//   Gather(DequantizeLinear(q, s, z), idx, axis=0) -> DequantizeLinear(Gather(q, idx), s, z)
//   q, s (and z) constants; s one scale per row of q ([V, ...] with its other dims 1 or q's) or a
//   scalar (the Mul form), a per-tensor scalar (DequantizeLinear); the table read by the Gather
//   only. Exact: each gathered element goes through the same Cast and multiply. Only the rows
//   gathered are dequantized, not the whole table on every call (MiniLM int8: 30522 x 384).
// The other direction, DequantizeLinear(QuantizeLinear(x)), rounds x and is NOT folded.
//
// int8 weights the graph dequantizes, always:
//   MatMul(X, Mul(Cast(q, to=FLOAT), s)) [+ b] [-> Act]          -> sdx.Linear(X, q, b?, S, activation)
//   MatMul(X, DequantizeLinear(q, s[, 0])) [+ b] [-> Act]        -> sdx.Linear(X, q, b?, S, activation)
//   X float32; q an int8 [K, N] constant; s float32 constants broadcasting along N (Mul), or per tensor
//   or [N] on axis 1 with a zero point absent or 0 and no block_size (DequantizeLinear); S = s as [N].
//   The weight stays int8 in the graph, and no Cast and Mul of all of it run on every call (MiniLM-L6
//   with int8 weights: 10.6 M weights per call). sdx.Linear packs W' = fl(float(q) * S[n]), the graph's
//   own dequantization, once for oneDNN at larger M (its int8 copy and the packed float copy stay in
//   memory; constant folding would keep a float copy besides), and at M <= 8 streams q with S applied
//   after each dot product (its small-M kernel): results agree with the unfused graph up to float
//   summation order and that one rounding. The Cast/Mul or DequantizeLinear stays for other readers.
//
// QDQ products in integers, always (onnxruntime's QDQ rewrite makes the same op):
//   MatMul(DequantizeLinear(x8, sx, zx), W) [+ b]   -> com.microsoft.MatMulIntegerToFloat(x8, q, sx, S, zx, -, b)
//   x8 uint8/int8 with one scale sx and zero point zx (constants); W a dequantized int8 weight as above
//   (b_zero_point 0); b a constant along N. The kernel sums (x8 - zx) q exactly in integers and scales once:
//   fl(fl(acc) * fl(sx * S[n])) where the graph summed fl(x) fl(w) products in float; results agree up to
//   that rounding. uint8 X takes oneDNN's VNNI int8 kernel, about 4x the float32 GEMM's speed here.
// Order: last before the backend pass (2400), after MatMulChainOptimizations folded constant weights.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <unordered_set>

#include "core/float16.h"
#include "opt/fusion_util.h"
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr int64_t kFp16MinElements = 1024;
constexpr float kFp16Max = 65504.f;
constexpr int64_t kLowpMinElements = 1024;

// ---- Lower-precision weights read by sdx.Linear ----

// w [R, C] float32, or its transpose, as a [K, N] matrix: element (k, n).
struct WeightView {
  const float* p;
  int64_t K, N;
  bool trans;  // p holds [N, K]
  float at(int64_t k, int64_t n) const { return trans ? p[n * K + k] : p[k * N + n]; }
};

Tensor to_float16(const WeightView& w) {
  Tensor t = Tensor::allocate(DType::kFloat16, Shape{w.K, w.N}).value();
  Float16* q = t.data<Float16>();
  for (int64_t k = 0; k < w.K; ++k)
    for (int64_t n = 0; n < w.N; ++n) q[k * w.N + n] = Float16::from_float(w.at(k, n));
  return t;
}

// Symmetric per-column int8: {W' int8 [K, N], S float32 [N]}.
std::pair<Tensor, Tensor> to_int8(const WeightView& w) {
  Tensor q = Tensor::allocate(DType::kInt8, Shape{w.K, w.N}).value();
  Tensor s = Tensor::allocate(DType::kFloat32, Shape{w.N}).value();
  int8_t* qp = q.data<int8_t>();
  float* sp = s.data<float>();
  for (int64_t n = 0; n < w.N; ++n) {
    float amax = 0.f;
    for (int64_t k = 0; k < w.K; ++k) amax = std::max(amax, std::fabs(w.at(k, n)));
    const float scale = amax > 0.f ? amax / 127.f : 1.f;
    sp[n] = scale;
    for (int64_t k = 0; k < w.K; ++k) {
      const double r = std::nearbyint(static_cast<double>(w.at(k, n)) / static_cast<double>(scale));
      qp[k * w.N + n] = static_cast<int8_t>(std::clamp(r, -127.0, 127.0));
    }
  }
  return {std::move(q), std::move(s)};
}

// The weight of `n` at input 1 when it can move to lower precision: a finite float32 2-D constant of
// enough elements that only n reads (as input 1 only).
const Tensor* lowp_candidate(const ir::Graph& g, const ir::Node& n, bool fp16_range) {
  if (n.num_inputs() < 2 || elem_type(n.input(0)) != DType::kFloat32) return nullptr;
  const ir::Value* w = n.input(1);
  const Tensor* t = constant_value(w);
  if (!t || t->dtype() != DType::kFloat32 || t->rank() != 2 || t->numel() < kLowpMinElements) return nullptr;
  if (!has_single_use(g, w) || w->users()[0] != &n || n.input(0) == w) return nullptr;
  for (int i = 2; i < n.num_inputs(); ++i)
    if (n.input(i) == w) return nullptr;
  const float* p = t->data<float>();
  for (int64_t i = 0; i < t->numel(); ++i)
    if (!std::isfinite(p[i]) || (fp16_range && std::fabs(p[i]) > kFp16Max)) return nullptr;
  return t;
}

// The sdx.Linear inputs and attributes that replace `chain` (last: the node whose outputs it takes over).
struct LinearPlan {
  std::vector<ir::Node*> chain;
  ir::Node* last = nullptr;
  ir::Value* x = nullptr;
  ir::Value* bias = nullptr;  // [N] float32 or null
  std::vector<ir::Attribute> attrs;
  WeightView w{};
  std::string what;
};

std::optional<LinearPlan> plan_linear(ir::Graph& g, ir::Node& n) {
  LinearPlan p;
  p.x = n.input(0);
  const std::string& op = n.op_type();
  if (n.domain() == "sdx" && op == "Linear") {
    if (n.num_inputs() > 3) return std::nullopt;  // already has W_scale
    const Tensor* t = constant_value(n.input(1));
    p.chain = {&n};
    p.last = &n;
    p.bias = n.num_inputs() > 2 ? n.input(2) : nullptr;
    p.attrs = n.attributes();
    p.w = {t->data<float>(), t->shape()[0], t->shape()[1], false};
    p.what = "sdx.Linear";
    return p;
  }
  if (!n.domain().empty()) return std::nullopt;
  const Tensor* t = constant_value(n.input(1));
  if (op == "MatMul") {
    if (n.num_inputs() != 2) return std::nullopt;
    auto rank = rank_of(p.x);
    if (!rank || *rank < 1) return std::nullopt;
    const int64_t N = t->shape()[1];
    Epilogue e = match_epilogue(g, n, "MatMul(X, W)", true, *rank, *rank - 1, N, DType::kFloat32);
    const DType out = elem_type(e.last->output(0));
    if (out != DType::kUndefined && out != DType::kFloat32) return std::nullopt;
    p.chain = e.chain;
    p.last = e.last;
    if (e.bias) {
      const bool reuse = constant_value(e.bias_operand)->shape() == Shape{N};
      p.bias = reuse ? e.bias_operand
                     : g.add_constant(n.name() + "_bias", float_tensor(DType::kFloat32, Shape{N}, *e.bias));
    }
    if (e.activation) p.attrs = e.activation->attributes();
    p.w = {t->data<float>(), t->shape()[0], N, false};
    p.what = e.what;
    return p;
  }
  if (op == "Gemm") {
    if (n.attr_float("alpha", 1.f) != 1.f || n.attr_int("transA", 0) != 0) return std::nullopt;
    auto rank = rank_of(p.x);
    if (!rank || *rank != 2) return std::nullopt;
    const bool tb = n.attr_int("transB", 0) != 0;
    const int64_t K = t->shape()[tb ? 1 : 0], N = t->shape()[tb ? 0 : 1];
    if (n.num_inputs() > 2 && n.input(2)) {
      const Tensor* c = constant_value(n.input(2));
      if (!c || c->dtype() != DType::kFloat32 || n.attr_float("beta", 1.f) != 1.f) return std::nullopt;
      if (!(c->shape() == Shape{N} || c->shape() == Shape{1, N})) return std::nullopt;
      p.bias = c->rank() == 1 ? n.input(2) : g.add_constant(n.name() + "_bias", c->reshaped(Shape{N}));
    }
    p.chain = {&n};
    p.last = &n;
    p.w = {t->data<float>(), K, N, tb};
    p.what = tb ? "Gemm(A, B^T, C)" : "Gemm(A, B, C)";
    return p;
  }
  return std::nullopt;
}

bool lowp_linear(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  const bool int8 = ctx.options().int8;
  if (!int8 && !ctx.options().fp16) return false;
  const Tensor* t = lowp_candidate(g, n, !int8);
  if (!t) return false;
  std::optional<LinearPlan> p = plan_linear(g, n);
  if (!p) return false;
  ir::Value* w = n.input(1);
  const std::string wname = w->name();
  std::vector<ir::Value*> inputs = {p->x, nullptr, p->bias};
  std::string what = "float32 weight '" + wname + "' " + t->shape().to_string() + " -> ";
  if (int8) {
    auto [q, s] = to_int8(p->w);
    inputs[1] = g.add_constant(wname + "_int8", std::move(q));
    inputs.push_back(g.add_constant(wname + "_scale", std::move(s)));
    what += "int8 + per-column scales";
    ir::Attribute xq;
    xq.name = "x_quant";
    xq.type = ir::AttrType::kString;
    xq.s = ctx.options().int8_dynamic ? "dynamic" : "int16";
    p->attrs.push_back(std::move(xq));
    what += ctx.options().int8_dynamic ? ", X quantized to 8 bits per row at run time"
                                       : ", X rounded to 16 bits per row at run time";
  } else {
    inputs[1] = g.add_constant(wname + "_fp16", to_float16(p->w));
    what += "float16";
  }
  if (!p->bias && !int8) inputs.pop_back();
  what += (p->w.trans ? " (transposed)" : std::string()) + ", " + p->what + " -> sdx.Linear reading it directly";
  fuse(g, p->chain, p->last, "Linear", "sdx", 1, inputs, p->attrs);
  w->clear_initializer();  // its one reader is gone
  return ctx.applied(n, what);
}

// ---- float16 pre-cast (Cast per call) of the other weights ----

bool reads_weight_only(const ir::Graph& g, const ir::Value* w) {
  if (g.is_output(w) || w->users().empty()) return false;
  for (const ir::Node* u : w->users()) {
    if (u->owner() != &g || !u->domain().empty()) return false;
    if (u->op_type() != "MatMul" && u->op_type() != "Gemm" && u->op_type() != "Conv") return false;
    for (int i = 0; i < u->num_inputs(); ++i)
      if (u->input(i) == w && i != 1) return false;
  }
  return true;
}

bool precast_weight(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  if (!ctx.options().fp16) return false;
  ir::Value* w = n.input(1);
  const Tensor* t = constant_value(w);
  if (!t || t->dtype() != DType::kFloat32 || t->numel() < kFp16MinElements || !reads_weight_only(g, w)) return false;
  const float* p = t->data<float>();
  for (int64_t i = 0; i < t->numel(); ++i)
    if (std::isfinite(p[i]) && std::fabs(p[i]) > kFp16Max) return false;
  Tensor half = Tensor::allocate(DType::kFloat16, t->shape()).value();
  for (int64_t i = 0; i < t->numel(); ++i) half.data<Float16>()[i] = Float16::from_float(p[i]);
  ir::Value* w16 = g.add_constant(w->name() + "_fp16", std::move(half));
  ir::Node* cast =
      g.add_node("Cast", "", g.unique_name(w->name() + "_cast"), {w16}, {g.unique_name(w->name() + "_f32")});
  cast->set_opset(n.opset());
  cast->add_attribute(attr_int("to", dtype_to_onnx(DType::kFloat32)));
  cast->output(0)->mutable_type() = w->type();
  // Before the first reader in execution order, so the sort leaves everything else where it is.
  std::unordered_set<const ir::Node*> readers(w->users().begin(), w->users().end());
  for (const auto& m : g.nodes())
    if (readers.count(m.get())) {
      g.move_node_before(cast, m.get());
      break;
    }
  ctx.applied(
      n, "float32 weight '" + w->name() + "' " + t->shape().to_string() + " -> float16 initializer + Cast(to FLOAT)");
  g.replace_all_uses(w, cast->output(0));
  w->clear_initializer();
  return true;
}

bool attrs_match(const ir::Node& a, const ir::Node& b, const char* name, int64_t def) {
  return a.attr_int(name, def) == b.attr_int(name, def);
}

// Same constant tensor (or both absent).
bool same_constant(const ir::Value* a, const ir::Value* b) {
  if (!a || !b) return !a && !b;
  if (a == b) return true;
  const Tensor* x = constant_value(a);
  const Tensor* y = constant_value(b);
  return x && y && same_tensor(*x, *y);
}

bool quantize_of_dequantize(ir::Graph& g, ir::Node& q_node, PassContext& ctx) {
  ir::Node* dq = producer_of(q_node.input(0), "DequantizeLinear");
  if (!dq || !dq->input(0)) return false;
  ir::Value* q = dq->input(0);
  const DType qt = q->type().elem;
  if (qt != DType::kInt8 && qt != DType::kUint8 && qt != DType::kInt16 && qt != DType::kUint16) return false;
  if (q_node.output(0)->type().elem != qt) return false;
  if (q_node.attr("precision") || dq->attr("output_dtype")) return false;
  if (q_node.attr("output_dtype") && q_node.attr_int("output_dtype", 0) != dtype_to_onnx(qt)) return false;
  if (!attrs_match(*dq, q_node, "axis", 1) || !attrs_match(*dq, q_node, "block_size", 0)) return false;
  const ir::Value* s_dq = dq->input(1);
  const ir::Value* s_q = q_node.input(1);
  const ir::Value* z_dq = dq->num_inputs() > 2 ? dq->input(2) : nullptr;
  const ir::Value* z_q = q_node.num_inputs() > 2 ? q_node.input(2) : nullptr;
  if (!same_constant(s_dq, s_q) || !same_constant(z_dq, z_q)) return false;
  const Tensor* s = constant_value(s_q);
  if (!s || s->dtype() != DType::kFloat32 || s->numel() == 0) return false;
  if (z_q) {
    const Tensor* z = constant_value(z_q);
    if (!z || z->dtype() != qt) return false;
  } else if (qt != DType::kUint8) {
    return false;  // without a zero point QuantizeLinear produces uint8
  }
  const float* sp = s->data<float>();
  for (int64_t i = 0; i < s->numel(); ++i) {
    const float a = std::fabs(sp[i]);
    if (!(a >= FLT_MIN && a <= FLT_MAX / 262144.f)) return false;  // also rejects NaN
  }
  return forward_output(g, &q_node, q) && ctx.applied(q_node, "QuantizeLinear(DequantizeLinear(q, s, z), s, z) -> q");
}

// ---- Gather from a dequantized table: gather the integers, dequantize the rows gathered ----

// A new node placed just before `before` (so the order stays topological), its output typed.
ir::Node* add_before(ir::Graph& g, const ir::Node& before, const std::string& op, int opset,
                     const std::vector<ir::Value*>& inputs, DType out_type, std::vector<ir::Attribute> attrs = {}) {
  const std::string name = g.unique_name(before.name().empty() ? op : before.name() + "/" + op);
  ir::Node* n = g.add_node(op, "", name, inputs, {g.unique_name(name + "_out")});
  n->set_opset(opset);
  for (ir::Attribute& a : attrs) n->add_attribute(std::move(a));
  n->output(0)->mutable_type() = ir::TypeInfo::tensor(out_type);
  g.move_node_before(n, &before);
  return n;
}

bool gather_of_dequantized(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  ir::Value* table = n.input(0);
  ir::Value* idx = n.input(1);
  if (!table || !idx || n.attr_int("axis", 0) != 0 || !has_single_use(g, table)) return false;
  ir::Node* dq = producer_of(table, "DequantizeLinear");
  if (dq) {
    // Per-tensor DequantizeLinear(q, s, z): the same s and z for the rows gathered.
    const Tensor* q = constant_value(dq->input(0));
    const Tensor* sc = dq->num_inputs() > 1 ? constant_value(dq->input(1)) : nullptr;
    if (!q || q->rank() < 1 || !sc || sc->numel() != 1 || sc->rank() != 0 || dq->attr("block_size")) return false;
    if (dq->num_inputs() > 2 && dq->input(2)) {
      const Tensor* z = constant_value(dq->input(2));
      if (!z || z->numel() != 1 || z->rank() != 0) return false;
    }
    ir::Node* gq = add_before(g, n, "Gather", n.opset(), {dq->input(0), idx}, q->dtype(), {attr_int("axis", 0)});
    std::vector<ir::Value*> inputs = dq->inputs();
    inputs[0] = gq->output(0);
    std::vector<ir::Attribute> attrs = dq->attributes();
    const int opset = dq->opset();
    fuse(g, {dq, &n}, &n, "DequantizeLinear", "", opset, inputs, std::move(attrs));
    ctx.applied_value(table->name(), "Gather(DequantizeLinear(q)) -> DequantizeLinear(Gather(q)) (per-tensor scale)");
    return true;
  }
  // Mul(Cast(q), s), s per row ([V, 1, ...] or [V, D, ...]) or one scale.
  ir::Node* mul = producer_of(table, "Mul");
  if (!mul || mul->num_inputs() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    ir::Node* cast = producer_of(mul->input(i), "Cast");
    ir::Value* sv = mul->input(1 - i);
    if (!cast || !has_single_use(g, mul->input(i))) continue;
    const Tensor* q = constant_value(cast->input(0));
    const Tensor* sc = constant_value(sv);
    if (!q || !sc || q->rank() < 1 || !is_float(sc->dtype()) || cast->output(0)->type().elem != sc->dtype()) continue;
    // s broadcasts against q's shape without growing it, and row v of the product reads s's row v
    // (or its only row): then gathering s's rows (or not) gives the product of the gathered rows.
    bool per_row = sc->rank() == q->rank() && sc->shape()[0] == q->shape()[0] && q->shape()[0] > 1;
    const bool scalar = sc->rank() == 0;
    for (int d = 1; per_row && d < q->rank(); ++d)
      per_row = sc->shape()[d] == 1 || sc->shape()[d] == q->shape()[d];
    if (!per_row && !scalar) continue;
    ir::Node* gq = add_before(g, n, "Gather", n.opset(), {cast->input(0), idx}, q->dtype(), {attr_int("axis", 0)});
    ir::Node* cq = add_before(g, n, "Cast", cast->opset(), {gq->output(0)}, sc->dtype(), cast->attributes());
    ir::Value* s_rows = sv;
    if (per_row) s_rows = add_before(g, n, "Gather", n.opset(), {sv, idx}, sc->dtype(), {attr_int("axis", 0)})->output(0);
    fuse(g, {cast, mul, &n}, &n, "Mul", "", mul->opset(), {cq->output(0), s_rows}, {});
    ctx.applied_value(table->name(), "Gather(Mul(Cast(q), s)) -> Mul(Cast(Gather(q)), Gather(s)) (" +
                                         q->shape().to_string() + " table, only the rows gathered dequantized)");
    return true;
  }
  return false;
}

// ---- int8 weights the graph dequantizes, read by sdx.Linear directly ----

// The int8 [K, N] constant behind a weight dequantized per column by the graph, and its scales:
//   Mul(Cast(q, to=FLOAT), s)            s float32 broadcasting along N ([N], [1, N], one element)
//   DequantizeLinear(q, s[, z])          s per tensor or [N] on axis 1, z absent or all 0, no block_size
// Both compute fl(float(q) * s[n]) per weight, which is what sdx.Linear's float paths compute from q and
// its W_scale.
struct DequantizedWeight {
  ir::Value* q = nullptr;
  std::vector<double> scale;  // N values
};

std::optional<DequantizedWeight> dequantized_weight(const ir::Value* w) {
  auto int8_matrix = [](const ir::Value* v) {
    const Tensor* t = v ? constant_value(v) : nullptr;
    return t && t->dtype() == DType::kInt8 && t->rank() == 2 ? t : nullptr;
  };
  if (ir::Node* mul = producer_of(w, "Mul"); mul && mul->num_inputs() == 2) {
    for (int i = 0; i < 2; ++i) {
      ir::Node* cast = producer_of(mul->input(i), "Cast");
      if (!cast || cast->attr_int("to", 0) != dtype_to_onnx(DType::kFloat32)) continue;
      const Tensor* q = int8_matrix(cast->input(0));
      const Tensor* sc = constant_value(mul->input(1 - i));
      if (!q || !sc || sc->dtype() != DType::kFloat32) continue;
      auto scale = per_axis_constant(mul->input(1 - i), 2, 1, q->shape()[1], DType::kFloat32);
      if (scale) return DequantizedWeight{cast->input(0), std::move(*scale)};
    }
    return std::nullopt;
  }
  ir::Node* dq = producer_of(w, "DequantizeLinear");
  if (!dq || dq->num_inputs() < 2 || dq->attr_int("block_size", 0) != 0 || dq->attr("output_dtype")) return std::nullopt;
  const Tensor* q = int8_matrix(dq->input(0));
  const Tensor* sc = constant_value(dq->input(1));
  if (!q || !sc || sc->dtype() != DType::kFloat32) return std::nullopt;
  // A zero point must be a constant of zeros (uniform_constant is empty for anything else).
  if (dq->num_inputs() > 2 && dq->input(2) && uniform_constant(dq->input(2)) != 0.0) return std::nullopt;
  const int64_t N = q->shape()[1];
  const int64_t axis = dq->attr_int("axis", 1);
  if (sc->numel() == 1 && sc->rank() <= 1) return DequantizedWeight{dq->input(0), std::vector<double>(N, sc->data<float>()[0])};
  if (sc->rank() != 1 || sc->shape()[0] != N || (axis != 1 && axis != -1)) return std::nullopt;
  return DequantizedWeight{dq->input(0), std::vector<double>(sc->data<float>(), sc->data<float>() + N)};
}

// MatMul(DequantizeLinear(x8, sx, zx), dequantized int8 W) [+ b] -> com.microsoft.MatMulIntegerToFloat:
// a QDQ model's product taken in integers, as onnxruntime's QDQ rewrite does.
bool qdq_matmul(ir::Graph& g, ir::Node& mm, PassContext& ctx) {
  if (!mm.domain().empty() || mm.num_inputs() != 2) return false;
  ir::Node* dqx = producer_of(mm.input(0), "DequantizeLinear");
  if (!dqx || dqx->num_inputs() < 2 || dqx->attr_int("block_size", 0) != 0 || dqx->attr("output_dtype")) return false;
  const DType xt = elem_type(dqx->input(0));
  const Tensor* sx = constant_value(dqx->input(1));
  if ((xt != DType::kUint8 && xt != DType::kInt8) || !sx || sx->dtype() != DType::kFloat32 || sx->numel() != 1)
    return false;
  ir::Value* zx = dqx->num_inputs() > 2 ? dqx->input(2) : nullptr;
  if (zx) {
    const Tensor* z = constant_value(zx);
    if (!z || z->numel() != 1 || z->dtype() != xt) return false;
  }
  std::optional<DequantizedWeight> w = dequantized_weight(mm.input(1));
  auto rank = rank_of(mm.input(0));
  if (!w || !rank || *rank < 1 || elem_type(mm.output(0)) != DType::kFloat32) return false;
  const Tensor* q = constant_value(w->q);
  const int64_t N = q->shape()[1];
  std::vector<ir::Node*> chain = {&mm};
  ir::Value* bias = nullptr;
  std::string what = "MatMul(DequantizeLinear(x), dequantize(q))";
  if (ir::Node* add = only_reader(g, mm.output(0)); add && add->domain().empty() && add->op_type() == "Add" &&
                                                   add->num_inputs() == 2 && elem_type(add->output(0)) == DType::kFloat32) {
    ir::Value* other = add->input(0) == mm.output(0) ? add->input(1) : add->input(0);
    if (auto b = per_axis_constant(other, *rank, *rank - 1, N, DType::kFloat32)) {
      chain.push_back(add);
      bias = g.add_constant(mm.name() + "_bias", float_tensor(DType::kFloat32, Shape{N}, *b));
      what = "Add(" + what + ", b)";
    }
  }
  ir::Value* b_scale = g.add_constant(w->q->name() + "_scale", float_tensor(DType::kFloat32, Shape{N}, w->scale));
  std::vector<ir::Value*> inputs = {dqx->input(0), w->q, dqx->input(1), b_scale, zx, nullptr, bias};
  while (!inputs.back()) inputs.pop_back();
  fuse(g, chain, chain.back(), "MatMulIntegerToFloat", "com.microsoft", 1, inputs, {});
  return ctx.applied(mm, what + " with int8 '" + w->q->name() + "' " + q->shape().to_string() +
                             " -> com.microsoft.MatMulIntegerToFloat (integer products)");
}

bool dequantized_linear(ir::Graph& g, ir::Node& mm, PassContext& ctx) {
  if (!mm.domain().empty() || mm.num_inputs() != 2 || elem_type(mm.input(0)) != DType::kFloat32) return false;
  std::optional<DequantizedWeight> w = dequantized_weight(mm.input(1));
  auto rank = rank_of(mm.input(0));
  if (!w || !rank || *rank < 1) return false;
  const Tensor* q = constant_value(w->q);
  const int64_t N = q->shape()[1];
  Epilogue e = match_epilogue(g, mm, "MatMul(X, dequantize(q))", true, *rank, *rank - 1, N, DType::kFloat32);
  const DType out = elem_type(e.last->output(0));
  if (out != DType::kUndefined && out != DType::kFloat32) return false;
  std::vector<ir::Value*> inputs = {mm.input(0), w->q, nullptr};
  if (e.bias) {
    const bool reuse = constant_value(e.bias_operand)->shape() == Shape{N};
    inputs[2] = reuse ? e.bias_operand
                      : g.add_constant(mm.name() + "_bias", float_tensor(DType::kFloat32, Shape{N}, *e.bias));
  }
  inputs.push_back(g.add_constant(w->q->name() + "_scale", float_tensor(DType::kFloat32, Shape{N}, w->scale)));
  const std::string what = e.what + " with int8 '" + w->q->name() + "' " + q->shape().to_string() +
                           " -> sdx.Linear reading it directly (no per-call dequantization)";
  fuse(g, e.chain, e.last, "Linear", "sdx", 1, inputs,
       e.activation ? e.activation->attributes() : std::vector<ir::Attribute>{});
  return ctx.applied(mm, what);
}

class QuantizationOptimizations final : public PatternPass {
 public:
  QuantizationOptimizations() {
    add_rule({"Gather(dequantized table) -> dequantize(Gather(table))", {"Gather"}, gather_of_dequantized});
    // First: a weight sdx.Linear can read in lower precision; the pre-cast takes the rest (Conv, shared).
    add_rule({"lower-precision weight read by sdx.Linear", {"MatMul", "Gemm", "sdx:Linear"}, lowp_linear});
    add_rule({"fp16 weight pre-cast", {"MatMul", "Gemm", "Conv"}, precast_weight});
    add_rule({"QDQ MatMul -> MatMulIntegerToFloat", {"MatMul"}, qdq_matmul});
    add_rule({"int8 weight dequantized by the graph, read by sdx.Linear", {"MatMul"}, dequantized_linear});
    add_rule({"QuantizeLinear(DequantizeLinear(q)) -> q", {"QuantizeLinear"}, quantize_of_dequantize});
  }
  const char* name() const override { return "QuantizationOptimizations"; }
  PassCategory category() const override { return PassCategory::kPrecision; }
};

const PassRegistrar kRegistrar("quantize_weights", [] { return std::make_unique<QuantizationOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
