// AttentionFusionOptimizations (pass 15, order 1500): replaces the scaled dot-product attention that
// exporters emit (torch.onnx for BERT, GPT-2, ViT, ...) by one sdx.Attention node (schema in
// ir/schemas/fused_attention.cc), whose CPU kernel streams the softmax and never materializes the
// S_q x S_kv scores. Must run before HorizontalFusionOptimizations (1600) by the DSP order; it does not
// depend on it either way (it matches from the 4-D Q, K, V values, whatever computes them).
//
// Pattern, anchored on the Softmax (every intermediate read once, by the next node of the pattern):
//   scores = MatMul(Q', Kt')                 Q' = Q or Mul(Q, c) / Div(Q, c); Kt' = Kt or Mul/Div(Kt, c)
//            Kt = Transpose(X, p) with K = Transpose(X, p o [0,1,3,2]) [B, H, S_kv, D]: p = [0,1,3,2] on
//            K [B,H,S,D] gives K = X; p = [0,2,3,1] on [B,S,H,D] gives a new Transpose(X, [0,2,1,3])
//   scaled = Div(scores, c) | Mul(scores, c) | Mul(c, scores) | scores          (c: a scalar constant)
//   masked = up to two of Add(., m) | Add(m, .) (additive) and Where(b, ., f) | Where(b, f, .) (bool,
//            f a scalar constant: the mask_value attribute; the second form keeps where b is false)
//   probs  = Softmax(masked, axis = last: -1 or 3; before opset 13 the 2-D coercion at axis 3 is the same)
//   out    = MatMul(probs, V)
//   -> out = sdx.Attention(Q, K, V[, mask], scale = product of the c's, causal, mask_value)
//
// Causal masks: a mask that evaluates statically (a constant, or a Slice of a constant buffer with
// starts/ends computed from static shapes, as GPT-2's bias[:, :, k_len - q_len : k_len, :k_len]; see
// opt/static_eval.h) and equals the end-aligned lower triangle (query i keeps keys j <= i + S_kv - S_q,
// leading dims 1, S_q <= S_kv so every row keeps a key) becomes causal = 1 and is dropped: bool masks
// through Where with f <= -1e4 (or -inf), additive masks of 0 kept / <= -1e4 masked. This holds exactly
// for -inf and, for finite f, whenever the kept scores of a row are within ~9900 of each other in the
// float32 exp's range (exp(f + s - max) underflows to exactly 0), which is what those exporters rely on.
// Everything else is exact up to rounding: the scale moves into the kernel, and at most one mask that
// is not causal stays as input 3.
//
// Paged form (second rule): an sdx.Attention whose K and V are sdx.PagedConcat of one slot map (a paged
// KV cache, python/sdx/_paged_graph.py) becomes sdx.PagedAttention, which reads the pool in place.
//
// Conditions: Q, K^T, V, scores of rank 4 with static ranks and float32/float64 elements; Q's batch and
// head dims are not broadcast up by K or V (each of theirs is 1 or the same dim as Q's); masks broadcast
// to the scores' shape without enlarging it; no intermediate is read outside the pattern or is a graph
// output. Nodes left dead by the rewrite (the old K Transpose, a dropped mask's Slice chain) go too.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"
#include "opt/static_eval.h"

namespace sdx::opt {
namespace {

using ir::Dim;
using ir::Node;
using ir::Value;

constexpr double kMaskedAtMost = -1e4;  // a causal mask's "masked" entries

const std::vector<Dim>* dims_of(const Value* v) {
  if (!v || v->type().kind != ir::TypeInfo::Kind::kTensor || !v->type().shape) return nullptr;
  return &*v->type().shape;
}
bool rank4(const Value* v) { return dims_of(v) && dims_of(v)->size() == 4; }
bool same_dim(const Dim& a, const Dim& b) {
  if (a.is_fixed() || b.is_fixed()) return a.is_fixed() && b.is_fixed() && a.value == b.value;
  return !a.param.empty() && a.param == b.param;
}
bool is_one(const Dim& d) { return d.is_fixed() && d.value == 1; }
// `other` broadcast against `full` leaves `full` as it is.
bool fits(const Dim& other, const Dim& full) { return is_one(other) || same_dim(other, full); }

// A one-element static value of rank <= 4 (so it cannot enlarge what it is combined with).
std::optional<double> scalar_of(const Value* v) {
  auto t = static_value(v, 1);
  if (!t || t->numel() != 1 || t->dims.size() > 4 || !t->known() || !dtype_is_float(t->dtype)) return std::nullopt;
  return t->values[0];
}

bool is_op(const Node* n, const char* op) { return n && n->domain().empty() && n->op_type() == op; }

struct MaskOp {
  Node* node = nullptr;
  Value* mask = nullptr;  // Add: the other operand; Where: the condition
  bool where = false;
  bool keep_if_false = false;  // Where(b, f, scores)
  double fill = 0;
  bool causal = false;
};

struct Match {
  Node* qk = nullptr;
  Node* scale_node = nullptr;
  Node* q_scale = nullptr;
  Node* k_scale = nullptr;
  std::vector<MaskOp> masks;
  double scale = 1.0;
  Value* q = nullptr;
  Value* kt = nullptr;
};

// Walks from the Softmax input up to the scores MatMul: masks first (at most two), then one scale.
bool parse_scores(const ir::Graph& g, Value* s, Match& m, int masks_left, bool scale_allowed) {
  Node* p = s ? s->producer() : nullptr;
  if (!p || p->owner() != &g || !p->domain().empty() || !has_single_use(g, s) || s->producer_output() != 0)
    return false;
  if (p->op_type() == "MatMul") {
    m.qk = p;
    return true;
  }
  if (scale_allowed && (p->op_type() == "Mul" || p->op_type() == "Div")) {
    for (int a = 0; a < 2; ++a) {
      if (p->op_type() == "Div" && a == 1) break;  // c / scores is no scale
      auto c = scalar_of(p->input(1 - a));
      if (!c || *c == 0 || !std::isfinite(*c)) continue;
      Match next = m;
      next.scale_node = p;
      next.scale = p->op_type() == "Div" ? 1.0 / *c : *c;
      if (parse_scores(g, p->input(a), next, 0, false)) {
        m = next;
        return true;
      }
    }
    return false;
  }
  if (masks_left > 0 && p->op_type() == "Add") {
    for (int a = 0; a < 2; ++a) {
      Match next = m;
      next.masks.push_back({p, p->input(1 - a), false, false, 0, false});
      if (parse_scores(g, p->input(a), next, masks_left - 1, true)) {
        m = next;
        return true;
      }
    }
    return false;
  }
  if (masks_left > 0 && p->op_type() == "Where" && p->num_inputs() == 3) {
    for (int a = 1; a <= 2; ++a) {
      auto fill = scalar_of(p->input(a == 1 ? 2 : 1));
      if (!fill || p->input(a) == p->input(0)) continue;
      Match next = m;
      next.masks.push_back({p, p->input(0), true, a == 2, *fill, false});
      if (parse_scores(g, p->input(a), next, masks_left - 1, true)) {
        m = next;
        return true;
      }
    }
  }
  return false;
}

// Q' = Mul(Q, c) / Div(Q, c) read only by the scores MatMul: folds c into the scale.
Value* absorb_scale(const ir::Graph& g, Value* v, Node** node, double* scale) {
  Node* p = v ? v->producer() : nullptr;
  if (!is_op(p, "Mul") && !is_op(p, "Div")) return v;
  if (p->owner() != &g || !has_single_use(g, v) || p->num_outputs() != 1) return v;
  for (int a = 0; a < 2; ++a) {
    if (p->op_type() == "Div" && a == 1) break;
    auto c = scalar_of(p->input(1 - a));
    if (!c || *c == 0 || !std::isfinite(*c) || !rank4(p->input(a))) continue;
    *scale *= p->op_type() == "Div" ? 1.0 / *c : *c;
    *node = p;
    return p->input(a);
  }
  return v;
}

// The mask is the end-aligned lower triangle over [s_q, s_kv] (leading dims 1): true for bool masks
// kept where true (keep_if_false flips that), for additive masks 0 where kept and <= -1e4 elsewhere.
bool is_causal_mask(const MaskOp& op, int64_t s_q, int64_t s_kv) {
  if (op.where && !(op.fill <= kMaskedAtMost)) return false;
  auto t = static_value(op.mask);
  if (!t || !t->known() || t->dims.size() < 2 || t->dims.size() > 4) return false;
  const size_t r = t->dims.size();
  for (size_t i = 0; i + 2 < r; ++i)
    if (t->dims[i] != 1) return false;
  if (t->dims[r - 2] != s_q || t->dims[r - 1] != s_kv) return false;
  const int64_t offset = s_kv - s_q;
  for (int64_t i = 0; i < s_q; ++i)
    for (int64_t j = 0; j < s_kv; ++j) {
      const bool visible = j <= i + offset;
      const double x = t->values[static_cast<size_t>(i * s_kv + j)];
      if (op.where) {
        if (((x != 0) != op.keep_if_false) != visible) return false;
      } else if (visible ? x != 0 : !(x <= kMaskedAtMost)) {
        return false;
      }
    }
  return true;
}

// Removes v's producer when nothing reads its outputs any more, and then its inputs' producers.
void remove_if_dead(ir::Graph& g, Value* v) {
  if (!v || g.is_output(v) || !v->users().empty()) return;
  Node* p = v->producer();
  if (!p || p->removed() || p->owner() != &g) return;
  for (const Value* o : p->outputs())
    if (o && (!o->users().empty() || g.is_output(o))) return;
  const std::vector<Value*> inputs = p->inputs();
  g.remove_node(p);
  for (Value* in : inputs) remove_if_dead(g, in);
}

bool fuse_attention(ir::Graph& g, Node& softmax, PassContext& ctx) {
  Value* x = softmax.input(0);
  Value* probs = softmax.output(0);
  // x has rank 4 when the scores do and the masks fit them (checked below); its own static shape may be
  // unknown (a Where over a mask sliced with computed bounds).
  if (!x || !probs || probs->users().size() != 1 || g.is_output(probs)) return false;
  const int64_t axis = softmax.attr_int("axis", softmax.opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return false;
  Node* pv = probs->users()[0];
  if (!is_op(pv, "MatMul") || pv->owner() != &g || pv->input(0) != probs || pv->input(1) == probs) return false;

  Match m;
  if (!parse_scores(g, x, m, 2, true) || !m.qk->input(0) || !m.qk->input(1)) return false;
  m.q = absorb_scale(g, m.qk->input(0), &m.q_scale, &m.scale);
  m.kt = absorb_scale(g, m.qk->input(1), &m.k_scale, &m.scale);
  const float scale = static_cast<float>(m.scale);
  if (!std::isfinite(scale) || scale == 0) return false;  // the kernel applies it to Q: keep it a plain number
  Value* v = pv->input(1);
  Value* scores = m.qk->output(0);
  if (!rank4(m.q) || !rank4(m.kt) || !rank4(v) || !rank4(scores) || m.q == m.kt) return false;
  const DType dt = m.q->type().elem;
  if ((dt != DType::kFloat32 && dt != DType::kFloat64) || m.kt->type().elem != dt || v->type().elem != dt ||
      scores->type().elem != dt || x->type().elem != dt)
    return false;
  const auto& dq = *dims_of(m.q);
  const auto& dkt = *dims_of(m.kt);
  const auto& dv = *dims_of(v);
  for (int d = 0; d < 2; ++d)
    if (!fits(dkt[static_cast<size_t>(d)], dq[static_cast<size_t>(d)]) ||
        !fits(dv[static_cast<size_t>(d)], dq[static_cast<size_t>(d)]))
      return false;
  const Dim target[4] = {dq[0], dq[1], dq[2], dkt[3]};

  // K [B, H, S_kv, D] from Kt = Transpose(X, p): K = Transpose(X, p o [0, 1, 3, 2]).
  Node* kt_transpose = m.kt->producer();
  if (!is_op(kt_transpose, "Transpose") || kt_transpose->owner() != &g || !rank4(kt_transpose->input(0))) return false;
  std::vector<int64_t> perm = kt_transpose->attr_ints("perm", {3, 2, 1, 0});
  if (perm.size() != 4) return false;
  const std::vector<int64_t> k_perm = {perm[0], perm[1], perm[3], perm[2]};

  // Masks: causal ones are dropped, at most one other one stays.
  const bool static_seq = dq[2].is_fixed() && dkt[3].is_fixed() && dq[2].value <= dkt[3].value;
  bool causal = false;
  const MaskOp* kept = nullptr;
  for (MaskOp& op : m.masks) {
    if (op.where ? op.mask->type().elem != DType::kBool : op.mask->type().elem != dt) return false;
    // A causal mask's shape comes from its static value (a Slice with computed bounds has no static type).
    op.causal = static_seq && is_causal_mask(op, dq[2].value, dkt[3].value);
    if (op.causal) {
      causal = true;
      continue;
    }
    if (kept) return false;
    kept = &op;
    const auto* md = dims_of(op.mask);
    if (!md || md->size() > 4) return false;
    for (size_t i = 0; i < md->size(); ++i)
      if (!fits((*md)[i], target[4 - md->size() + i])) return false;
  }
  if (kept && kept->where && !std::isinf(kept->fill) &&
      static_cast<double>(static_cast<float>(kept->fill)) != kept->fill)
    return false;  // mask_value is a float attribute

  std::vector<Node*> nodes = {m.qk, &softmax, pv};
  for (Node* n : {m.scale_node, m.q_scale, m.k_scale})
    if (n) nodes.push_back(n);
  for (const MaskOp& op : m.masks) nodes.push_back(op.node);
  if (!only_used_within(g, nodes, pv)) return false;

  // --- rewrite ---
  Value* k = kt_transpose->input(0);
  if (k_perm != std::vector<int64_t>{0, 1, 2, 3}) {
    const std::string name =
        g.unique_name(kt_transpose->name().empty() ? "attention_k" : kt_transpose->name() + "/bhsd");
    Node* t = g.add_node("Transpose", "", name, {k}, {g.unique_name(name + "_out")});
    t->set_opset(kt_transpose->opset());
    t->add_attribute(attr_ints("perm", k_perm));
    k = t->output(0);
  }
  std::vector<Value*> inputs = {m.q, k, v};
  std::vector<ir::Attribute> attrs = {attr_float("scale", scale), attr_int("causal", causal ? 1 : 0)};
  std::string what = "MatMul(Q, K^T)";
  if (m.scale_node || m.q_scale || m.k_scale) what += " * scale";
  if (kept) {
    Value* mask = kept->mask;
    if (kept->where && kept->keep_if_false) {
      const std::string name =
          g.unique_name(kept->node->name().empty() ? "attention_mask" : kept->node->name() + "/keep");
      Node* negate = g.add_node("Not", "", name, {mask}, {g.unique_name(name + "_out")});
      negate->set_opset(1);
      mask = negate->output(0);
    }
    inputs.push_back(mask);
    if (kept->where) attrs.push_back(attr_float("mask_value", static_cast<float>(kept->fill)));
    what += kept->where ? " masked by Where(bool)" : " + additive mask";
  }
  if (causal) what += " with a causal mask";
  std::vector<Value*> read;  // what the removed nodes read: the old K^T, dropped masks, scale constants
  for (const Node* n : nodes) read.insert(read.end(), n->inputs().begin(), n->inputs().end());
  fuse(g, nodes, pv, "Attention", "sdx", 1, inputs, std::move(attrs));
  for (Value* r : read) remove_if_dead(g, r);
  return ctx.applied(softmax, what + " -> Softmax -> MatMul(P, V) -> sdx.Attention" + (causal ? " (causal)" : ""));
}

// sdx.Attention(Q, sdx.PagedConcat(Kc, map, Kn), sdx.PagedConcat(Vc, map, Vn)[, mask]) ->
// sdx.PagedAttention(Q, Kn, Vn, Kc, Vc, map[, mask]): the same keys (past slots of the pool, then the new
// ones) read from the pool where they are instead of gathered. The PagedConcats stay while something else
// reads them (a present.* output).
bool fuse_paged_attention(ir::Graph& g, Node& attn, PassContext& ctx) {
  if (attn.domain() != "sdx" || attn.op_type() != "Attention" || attn.num_inputs() < 3) return false;
  auto paged = [&](Value* v) -> Node* {
    Node* p = v ? v->producer() : nullptr;
    return p && p->owner() == &g && p->domain() == "sdx" && p->op_type() == "PagedConcat" && p->num_inputs() == 3
               ? p
               : nullptr;
  };
  Node* pk = paged(attn.input(1));
  Node* pv = paged(attn.input(2));
  Value* q = attn.input(0);
  if (!pk || !pv || pk->input(1) != pv->input(1) || !rank4(q) || q->type().elem != DType::kFloat32) return false;
  Value *kn = pk->input(2), *vn = pv->input(2);
  if (!rank4(kn) || !rank4(vn)) return false;
  const auto &dq = *dims_of(q), &dk = *dims_of(kn), &dv = *dims_of(vn);
  // The kernel takes new keys of Q's batch and length (no broadcast) and Q's heads or a divisor of them.
  const bool heads_ok = same_dim(dk[1], dq[1]) ||
                        (dk[1].is_fixed() && dq[1].is_fixed() && dk[1].value > 0 && dq[1].value % dk[1].value == 0);
  if (!same_dim(dk[0], dq[0]) || !same_dim(dk[2], dq[2]) || !heads_ok || !same_dim(dv[0], dq[0]) ||
      !same_dim(dv[1], dk[1]) || !same_dim(dv[2], dq[2]))
    return false;
  std::vector<Value*> inputs = {q, kn, vn, pk->input(0), pv->input(0), pk->input(1)};
  if (attn.num_inputs() > 3 && attn.input(3)) inputs.push_back(attn.input(3));
  std::vector<ir::Attribute> attrs = {attr_int("causal", attn.attr_int("causal", 0))};
  if (attn.attr("scale")) attrs.push_back(attr_float("scale", attn.attr_float("scale", 1.f)));
  if (attn.attr("mask_value")) attrs.push_back(attr_float("mask_value", attn.attr_float("mask_value", 0.f)));
  Value *gk = attn.input(1), *gv = attn.input(2);
  fuse(g, {&attn}, &attn, "PagedAttention", "sdx", 1, inputs, std::move(attrs));
  remove_if_dead(g, gk);
  remove_if_dead(g, gv);
  return ctx.applied(attn, "sdx.Attention over sdx.PagedConcat keys and values -> sdx.PagedAttention (the pool read "
                           "in place)");
}

class AttentionFusionOptimizations final : public PatternPass {
 public:
  AttentionFusionOptimizations() {
    add_rule({"MatMul/scale/mask/Softmax/MatMul -> sdx.Attention",
              {"Softmax"},
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) { return fuse_attention(g, n, ctx); }});
    add_rule({"sdx.Attention(Q, PagedConcat, PagedConcat) -> sdx.PagedAttention",
              {"sdx:Attention"},
              [](ir::Graph& g, ir::Node& n, PassContext& ctx) { return fuse_paged_attention(g, n, ctx); }});
  }
  const char* name() const override { return "AttentionFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }
};

const PassRegistrar kRegistrar("fuse_attention", [] { return std::make_unique<AttentionFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
