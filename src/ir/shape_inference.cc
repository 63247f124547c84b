#include "ir/shape_inference.h"

#include <algorithm>
#include <map>

#include "ir/dim_product.h"
#include "ir/symbolic_scalar.h"

namespace sdx::ir {
namespace {

bool is_fixed(const Dim& d, int64_t v) { return d.is_fixed() && d.value == v; }
bool same_symbol(const Dim& a, const Dim& b) {
  return !a.is_fixed() && !b.is_fixed() && !a.param.empty() && a.param == b.param;
}

// Normalizes a possibly negative axis against rank; nullopt when out of range.
std::optional<int64_t> norm_axis(int64_t axis, int64_t rank) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return axis;
}

// The product of dims: fixed when all are fixed; the one symbolic dim when the rest are
// fixed 1s; otherwise unknown.
Dim dims_product(Dims::const_iterator begin, Dims::const_iterator end) {
  std::optional<DimProduct> p = DimProduct{};
  for (auto it = begin; it != end && p; ++it) {
    auto f = parse_product(*it);
    p = f ? multiply(*p, *f) : std::nullopt;
  }
  return p ? spell(*p) : Dim{};
}

// Two dims that must be equal: the more informative one; an error only for two different fixed dims.
Result<Dim> merge_dims(const Dim& a, const Dim& b) {
  if (a.is_fixed() && b.is_fixed()) {
    if (a.value != b.value) return invalid_argument("");
    return a;
  }
  if (a.is_fixed()) return a;
  if (b.is_fixed()) return b;
  return a.param.empty() ? b : a;
}

// The reduction axes of a Reduce* node: from its second input or its attribute.
// nullopt when they are not known statically.
std::optional<std::vector<int64_t>> reduce_axes(const Node& node) {
  if (node.input(1)) return constant_ints_input(node, 1);
  return node.attr_ints("axes");
}

}  // namespace

// --- helpers ---------------------------------------------------------------

const Dims* input_dims(const Node& node, int i) {
  const Value* v = node.input(i);
  if (!v || v->type().kind != TypeInfo::Kind::kTensor || !v->type().shape) return nullptr;
  return &*v->type().shape;
}

namespace {

// Whether `name` is a dim some input of g (or of a graph g is a body of) declares.
bool input_symbol(const Graph* g, const std::string& name) {
  for (; g; g = g->parent())
    for (const Value* in : g->inputs())
      if (in->type().shape)
        for (const Dim& d : *in->type().shape)
          if (d.param == name) return true;
  return false;
}

}  // namespace

void set_output_dims(Node& node, int o, Dims dims) {
  Value* v = node.output(o);
  if (!v || v->type().kind != TypeInfo::Kind::kTensor) return;
  if (!v->type().shape) {
    v->mutable_type().shape = std::move(dims);
    return;
  }
  // A shape declared on an intermediate value (an exporter's value_info) keeps its fixed dims and the symbols
  // the inputs declare; where it has an unknown dim or a placeholder of its own ("unk__4": no input names it),
  // an inferred dim that is known takes its place, so the inputs' symbols reach it.
  Dims& have = *v->mutable_type().shape;
  if (have.size() != dims.size()) return;
  for (size_t i = 0; i < have.size(); ++i) {
    const bool placeholder = !have[i].is_fixed() && (have[i].param.empty() || !input_symbol(node.owner(), have[i].param));
    const bool known = dims[i].is_fixed() || !dims[i].param.empty();
    if (placeholder && known) have[i] = dims[i];
  }
}

std::optional<std::vector<int64_t>> constant_ints_input(const Node& node, int i) {
  const Value* v = node.input(i);
  if (!v) return std::nullopt;
  const Tensor* t = nullptr;
  if (v->is_initializer()) {
    if (v->is_graph_input()) return std::nullopt;  // the caller may feed another value
    t = &v->initializer();
  } else if (const Node* p = v->producer(); p && p->op_type() == "Constant" && normalize_domain(p->domain()).empty()) {
    if (const Attribute* a = p->attr("value_ints")) return a->ints;
    if (const Attribute* a = p->attr("value_int")) return std::vector<int64_t>{a->i};
    if (const Attribute* a = p->attr("value"); a && a->t.defined()) t = &a->t;
  }
  if (!t || !t->defined() || t->rank() > 1) return std::nullopt;
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  if (t->dtype() == DType::kInt64) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int64_t>()[k];
  } else if (t->dtype() == DType::kInt32) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int32_t>()[k];
  } else {
    return std::nullopt;
  }
  return out;
}

std::string dims_string(const Dims& d) { return TypeInfo::tensor(DType::kUndefined, d).shape_string(); }

Result<Dims> broadcast_dims(const Dims& a, const Dims& b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t k = 0; k < rank; ++k) {
    // Right-aligned: a missing leading dim behaves as a fixed 1.
    Dim da = k + a.size() >= rank ? a[k + a.size() - rank] : Dim::fixed(1);
    Dim db = k + b.size() >= rank ? b[k + b.size() - rank] : Dim::fixed(1);
    if (da.is_fixed() && db.is_fixed()) {
      if (da.value != db.value && da.value != 1 && db.value != 1)
        return invalid_argument("cannot broadcast shapes " + dims_string(a) + " and " + dims_string(b) +
                                " (dimension " + std::to_string(da.value) + " vs " + std::to_string(db.value) + ")");
      out[k] = da.value == 1 ? db : da;
    } else if (is_fixed(da, 1)) {
      out[k] = db;
    } else if (is_fixed(db, 1)) {
      out[k] = da;
    } else if (da.is_fixed()) {
      out[k] = da;  // db is symbolic: valid only when it is 1 or da
    } else if (db.is_fixed()) {
      out[k] = db;
    } else if (same_symbol(da, db)) {
      out[k] = da;
    } else {
      out[k] = Dim{};  // two different symbols: either may be 1
    }
  }
  return out;
}

// --- element-wise and generic rules ----------------------------------------

ShapeInferenceFn shape_same_as_input(int input_index) {
  return [input_index](Node& node) -> Status {
    const Dims* in = input_dims(node, input_index);
    if (!in) return Status::ok();
    for (int o = 0; o < node.num_outputs(); ++o) set_output_dims(node, o, *in);
    return Status::ok();
  };
}

ShapeInferenceFn shape_output_same_as_input(int output_index, int input_index) {
  return [output_index, input_index](Node& node) -> Status {
    if (const Dims* in = input_dims(node, input_index)) set_output_dims(node, output_index, *in);
    return Status::ok();
  };
}

Status shape_layer_norm(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x) return Status::ok();
  set_output_dims(node, 0, *x);
  auto axis = norm_axis(node.attr_int("axis", -1), static_cast<int64_t>(x->size()));
  if (!axis) return Status::ok();
  Dims stats(x->begin(), x->begin() + *axis);
  stats.resize(x->size(), Dim::fixed(1));
  for (int o = 1; o < node.num_outputs(); ++o) set_output_dims(node, o, stats);
  return Status::ok();
}

ShapeInferenceFn shape_broadcast() {
  return [](Node& node) -> Status {
    if (node.opset() > 0 && node.opset() < 7 && normalize_domain(node.domain()).empty()) {
      // Legacy broadcasting (the "broadcast"/"axis" attributes): B is broadcast onto A.
      if (node.attr_int("broadcast", 0) != 0 || node.num_inputs() == 2) return shape_same_as_input(0)(node);
    }
    std::optional<Dims> out;
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (!node.input(i)) continue;
      const Dims* d = input_dims(node, i);
      if (!d) return Status::ok();
      if (!out) {
        out = *d;
        continue;
      }
      Result<Dims> r = broadcast_dims(*out, *d);
      if (!r.is_ok()) return r.status();
      out = std::move(r.value());
    }
    if (out) set_output_dims(node, 0, std::move(*out));
    return Status::ok();
  };
}

ShapeInferenceFn shape_reduce() {
  return [](Node& node) -> Status {
    const Dims* x = input_dims(node, 0);
    if (!x) return Status::ok();
    auto axes = reduce_axes(node);
    if (!axes) return Status::ok();
    bool keepdims = node.attr_int("keepdims", 1) != 0;
    int64_t rank = static_cast<int64_t>(x->size());
    std::vector<bool> reduced(x->size(), axes->empty());
    if (axes->empty() && node.attr_int("noop_with_empty_axes", 0) != 0) {
      set_output_dims(node, 0, *x);
      return Status::ok();
    }
    for (int64_t a : *axes) {
      auto n = norm_axis(a, rank);
      if (!n) return Status::ok();
      reduced[static_cast<size_t>(*n)] = true;
    }
    Dims out;
    for (size_t k = 0; k < x->size(); ++k) {
      if (!reduced[k])
        out.push_back((*x)[k]);
      else if (keepdims)
        out.push_back(Dim::fixed(1));
    }
    set_output_dims(node, 0, std::move(out));
    return Status::ok();
  };
}

ShapeInferenceFn shape_arg_reduce() {
  return [](Node& node) -> Status {
    const Dims* x = input_dims(node, 0);
    if (!x) return Status::ok();
    auto axis = norm_axis(node.attr_int("axis", 0), static_cast<int64_t>(x->size()));
    if (!axis) return Status::ok();
    Dims out = *x;
    if (node.attr_int("keepdims", 1) != 0)
      out[static_cast<size_t>(*axis)] = Dim::fixed(1);
    else
      out.erase(out.begin() + *axis);
    set_output_dims(node, 0, std::move(out));
    return Status::ok();
  };
}

ShapeInferenceFn shape_conv_pool(ConvPoolKind kind) {
  return [kind](Node& node) -> Status {
    const Dims* x = input_dims(node, 0);
    if (!x || x->size() < 2) return Status::ok();
    size_t nsp = x->size() - 2;
    Dims out = {(*x)[0], (*x)[1]};
    if (kind == ConvPoolKind::kGlobalPool) {
      for (size_t k = 0; k < nsp; ++k) out.push_back(Dim::fixed(1));
      for (int o = 0; o < node.num_outputs(); ++o) set_output_dims(node, o, out);
      return Status::ok();
    }
    std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
    if (kind == ConvPoolKind::kConv) {
      const Dims* w = input_dims(node, 1);
      out[1] = w && !w->empty() ? (*w)[0] : Dim{};
      if (w && w->size() == x->size()) {
        int64_t group = node.attr_int("group", 1);
        const Dim &cx = (*x)[1], &cw = (*w)[1];
        if (cx.is_fixed() && cw.is_fixed() && cx.value != cw.value * group)
          return invalid_argument("input channels " + std::to_string(cx.value) + " of X " + dims_string(*x) +
                                  " do not match W " + dims_string(*w) + " with group " + std::to_string(group));
        if (kernel.empty()) {
          for (size_t k = 0; k < nsp; ++k) {
            if (!(*w)[2 + k].is_fixed()) {
              kernel.clear();
              break;
            }
            kernel.push_back((*w)[2 + k].value);
          }
        }
      }
    }
    std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(nsp, 1));
    std::vector<int64_t> dil = node.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
    std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
    std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
    bool ceil_mode = kind == ConvPoolKind::kPool && node.attr_int("ceil_mode", 0) != 0;
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    bool ok = kernel.size() == nsp && strides.size() == nsp && dil.size() == nsp && pads.size() == 2 * nsp &&
              (auto_pad == "NOTSET" || auto_pad.empty() || same || (auto_pad == "VALID" && !ceil_mode));
    for (size_t k = 0; ok && k < nsp; ++k) ok = strides[k] > 0 && dil[k] > 0 && kernel[k] > 0;
    for (size_t k = 0; k < nsp; ++k) {
      const Dim& in = (*x)[2 + k];
      if (!ok || !in.is_fixed()) {
        out.push_back(Dim{});
        continue;
      }
      int64_t s = strides[k];
      if (same) {
        out.push_back(Dim::fixed((in.value + s - 1) / s));
        continue;
      }
      int64_t pb = auto_pad == "VALID" ? 0 : pads[k], pe = auto_pad == "VALID" ? 0 : pads[k + nsp];
      int64_t span = in.value + pb + pe - (dil[k] * (kernel[k] - 1) + 1);
      if (span < 0)
        return invalid_argument("the window of spatial dim " + std::to_string(k) + " (kernel " +
                                std::to_string(kernel[k]) + ", dilation " + std::to_string(dil[k]) +
                                ") is larger than the padded input (" + std::to_string(in.value + pb + pe) + ")");
      int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
      if (ceil_mode && (o - 1) * s >= in.value + pb) --o;  // the last window may not start in the end padding
      out.push_back(Dim::fixed(o));
    }
    for (int o = 0; o < node.num_outputs(); ++o) set_output_dims(node, o, out);  // MaxPool Indices too
    return Status::ok();
  };
}

// --- shape manipulation ----------------------------------------------------

Status shape_attention(Node& node) {
  const Dims* q = input_dims(node, 0);
  const Dims* v = input_dims(node, 2);
  if (!q || !v || q->size() != 4 || v->size() != 4) return Status::ok();
  set_output_dims(node, 0, {(*q)[0], (*q)[1], (*q)[2], (*v)[3]});
  return Status::ok();
}

Status shape_matmul(Node& node) {
  const Dims *a = input_dims(node, 0), *b = input_dims(node, 1);
  if (!a || !b || a->empty() || b->empty()) return Status::ok();
  Dims A = *a, B = *b;
  bool a1 = A.size() == 1, b1 = B.size() == 1;
  if (a1) A.insert(A.begin(), Dim::fixed(1));
  if (b1) B.push_back(Dim::fixed(1));
  const Dim &ka = A[A.size() - 1], &kb = B[B.size() - 2];
  if (ka.is_fixed() && kb.is_fixed() && ka.value != kb.value)
    return invalid_argument("inner dimensions do not match: " + dims_string(*a) + " x " + dims_string(*b));
  Result<Dims> batch = broadcast_dims(Dims(A.begin(), A.end() - 2), Dims(B.begin(), B.end() - 2));
  if (!batch.is_ok())
    return invalid_argument("batch dimensions of " + dims_string(*a) + " x " + dims_string(*b) + ": " +
                            batch.status().message());
  Dims out = batch.value();
  if (!a1) out.push_back(A[A.size() - 2]);
  if (!b1) out.push_back(B[B.size() - 1]);
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_gemm(Node& node) {
  const Dims *a = input_dims(node, 0), *b = input_dims(node, 1);
  if (!a || !b || a->size() != 2 || b->size() != 2) return Status::ok();
  bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const Dim &m = (*a)[ta ? 1 : 0], &ka = (*a)[ta ? 0 : 1];
  const Dim &kb = (*b)[tb ? 1 : 0], &n = (*b)[tb ? 0 : 1];
  if (ka.is_fixed() && kb.is_fixed() && ka.value != kb.value)
    return invalid_argument("inner dimensions do not match: A " + dims_string(*a) + (ta ? " (transposed)" : "") +
                            ", B " + dims_string(*b) + (tb ? " (transposed)" : ""));
  set_output_dims(node, 0, {m, n});
  return Status::ok();
}

Status shape_transpose(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x) return Status::ok();
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.attr("perm"))
    for (int64_t k = static_cast<int64_t>(x->size()) - 1; k >= 0; --k) perm.push_back(k);
  if (perm.size() != x->size()) return Status::ok();
  std::vector<bool> seen(x->size(), false);
  Dims out;
  for (int64_t p : perm) {
    auto n = norm_axis(p, static_cast<int64_t>(x->size()));
    if (!n || seen[static_cast<size_t>(*n)]) return Status::ok();
    seen[static_cast<size_t>(*n)] = true;
    out.push_back((*x)[static_cast<size_t>(*n)]);
  }
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_reshape(Node& node) {
  std::optional<std::vector<int64_t>> shape =
      node.input(1) ? constant_ints_input(node, 1)
                    : (node.attr("shape") ? std::optional(node.attr_ints("shape")) : std::nullopt);
  // The target as dims: constant, else computed from shapes (Shape -> Gather -> Concat: symbolic_vector, whose
  // dims may be symbols or unknown).
  std::optional<Dims> target;
  if (shape) {
    target.emplace();
    for (int64_t v : *shape) target->push_back(Dim{v, {}});
  } else if (node.input(1)) {
    target = symbolic_vector(node.input(1));
  }
  if (!target) {
    // A shape computed at run time that cannot be followed: the rank is still its length when that is
    // static, the dims unknown.
    const Dims* s = node.input(1) ? input_dims(node, 1) : nullptr;
    if (s && s->size() == 1 && (*s)[0].is_fixed() && (*s)[0].value >= 0)
      set_output_dims(node, 0, Dims(static_cast<size_t>((*s)[0].value)));
    return Status::ok();
  }
  const Dims* x = input_dims(node, 0);
  bool allowzero = node.attr_int("allowzero", 0) != 0;
  Dims out;
  int infer_at = -1;
  for (size_t j = 0; j < target->size(); ++j) {
    if (!is_int((*target)[j])) {  // a symbol (or unknown) of a computed target
      out.push_back((*target)[j].param.empty() ? Dim{} : (*target)[j]);
      continue;
    }
    int64_t s = (*target)[j].value;
    if (s == 0 && !allowzero) {
      if (x && j >= x->size()) return Status::ok();
      out.push_back(x ? (*x)[j] : Dim{});
    } else if (s == -1) {
      if (infer_at >= 0 || (allowzero && std::any_of(target->begin(), target->end(), [](const Dim& d) {
                              return is_int(d) && d.value == 0;
                            })))
        return Status::ok();
      infer_at = static_cast<int>(j);
      out.push_back(Dim{});
    } else if (s < -1) {
      return Status::ok();
    } else {
      out.push_back(Dim::fixed(s));
    }
  }
  if (x) {
    // The input's elements over the output's known dims decide the -1 (or must agree), as products of
    // symbols: [s6, 6, 400, 64] -> [-1, 400, 64] gives "6*s6".
    std::optional<DimProduct> in = product_of(x->data(), x->data() + x->size()), known = DimProduct{};
    for (size_t j = 0; j < out.size() && known; ++j)
      if (static_cast<int>(j) != infer_at) {
        auto f = parse_product(out[j]);
        known = f ? multiply(*known, *f) : std::nullopt;
      }
    if (in && known) {
      if (infer_at >= 0) {
        if (auto q = divide(*in, *known)) out[static_cast<size_t>(infer_at)] = spell(*q);
      } else if (in->symbols == known->symbols && in->coef != known->coef) {
        if (!shape) return Status::ok();  // a computed target: the run says what is wrong with it
        return invalid_argument("cannot reshape " + dims_string(*x) + " (" + std::to_string(in->coef) +
                                " elements) to " + dims_string(out) + " (" + std::to_string(known->coef) + " elements)");
      }
    }
  }
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_flatten(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x) return Status::ok();
  int64_t rank = static_cast<int64_t>(x->size());
  int64_t axis = node.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return Status::ok();
  set_output_dims(node, 0, {dims_product(x->begin(), x->begin() + axis), dims_product(x->begin() + axis, x->end())});
  return Status::ok();
}

Status shape_squeeze(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x) return Status::ok();
  std::optional<std::vector<int64_t>> axes = node.input(1) ? constant_ints_input(node, 1) : node.attr_ints("axes");
  if (!axes) return Status::ok();
  int64_t rank = static_cast<int64_t>(x->size());
  std::vector<bool> drop(x->size(), false);
  if (axes->empty()) {
    for (size_t k = 0; k < x->size(); ++k) {
      if (!(*x)[k].is_fixed()) return Status::ok();  // may or may not be 1
      drop[k] = (*x)[k].value == 1;
    }
  }
  for (int64_t a : *axes) {
    auto n = norm_axis(a, rank);
    if (!n) return Status::ok();
    const Dim& d = (*x)[static_cast<size_t>(*n)];
    if (d.is_fixed() && d.value != 1) return Status::ok();
    drop[static_cast<size_t>(*n)] = true;
  }
  Dims out;
  for (size_t k = 0; k < x->size(); ++k)
    if (!drop[k]) out.push_back((*x)[k]);
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_unsqueeze(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x) return Status::ok();
  std::optional<std::vector<int64_t>> axes = node.input(1) ? constant_ints_input(node, 1) : node.attr_ints("axes");
  if (!axes || axes->empty()) return Status::ok();
  int64_t out_rank = static_cast<int64_t>(x->size() + axes->size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) {
    auto n = norm_axis(a, out_rank);
    if (!n || inserted[static_cast<size_t>(*n)]) return Status::ok();
    inserted[static_cast<size_t>(*n)] = true;
  }
  Dims out;
  size_t next = 0;
  for (size_t k = 0; k < inserted.size(); ++k) out.push_back(inserted[k] ? Dim::fixed(1) : (*x)[next++]);
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_concat(Node& node) {
  std::vector<const Dims*> ins;
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (!node.input(i)) continue;
    const Dims* d = input_dims(node, i);
    if (!d) return Status::ok();
    ins.push_back(d);
  }
  if (ins.empty() || !node.attr("axis")) return Status::ok();
  size_t rank = ins[0]->size();
  for (const Dims* d : ins)
    if (d->size() != rank) return Status::ok();
  auto axis = norm_axis(node.attr_int("axis", 0), static_cast<int64_t>(rank));
  if (!axis) return Status::ok();
  Dims out = *ins[0];
  int64_t total = 0;
  bool total_fixed = true;
  for (size_t i = 0; i < ins.size(); ++i) {
    for (size_t k = 0; k < rank; ++k) {
      const Dim& d = (*ins[i])[k];
      if (static_cast<int64_t>(k) == *axis) {
        if (d.is_fixed())
          total += d.value;
        else
          total_fixed = false;
      } else if (i > 0) {
        Result<Dim> m = merge_dims(out[k], d);
        if (!m.is_ok())
          return invalid_argument("input shapes " + dims_string(*ins[0]) + " and " + dims_string(*ins[i]) +
                                  " differ outside the concatenation axis " + std::to_string(*axis));
        out[k] = m.value();
      }
    }
  }
  out[static_cast<size_t>(*axis)] = total_fixed ? Dim::fixed(total) : (ins.size() == 1 ? (*ins[0])[*axis] : Dim{});
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_gather(Node& node) {
  const Dims *x = input_dims(node, 0), *idx = input_dims(node, 1);
  if (!x || !idx) return Status::ok();
  auto axis = norm_axis(node.attr_int("axis", 0), static_cast<int64_t>(x->size()));
  if (!axis) return Status::ok();
  Dims out(x->begin(), x->begin() + *axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), x->begin() + *axis + 1, x->end());
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_shape(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x) return Status::ok();
  int64_t rank = static_cast<int64_t>(x->size());
  int64_t start = node.attr_int("start", 0), end = node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  set_output_dims(node, 0, {Dim::fixed(std::max<int64_t>(0, end - start))});
  return Status::ok();
}

Status shape_size(Node& node) {
  set_output_dims(node, 0, {});
  return Status::ok();
}

Status shape_expand(Node& node) {
  const Dims* x = input_dims(node, 0);
  auto shape = constant_ints_input(node, 1);
  if (x && !shape) {
    // A shape computed from shapes (ir/symbolic_scalar.h): broadcast against its dims.
    if (auto sym = node.input(1) ? symbolic_vector(node.input(1)) : std::nullopt) {
      Dims target;
      for (const Dim& d : *sym) target.push_back(is_int(d) ? (d.value >= 0 ? Dim::fixed(d.value) : Dim{}) : d.param.empty() ? Dim{} : d);
      if (Result<Dims> r = broadcast_dims(*x, target); r.is_ok()) {
        set_output_dims(node, 0, std::move(r.value()));
        return Status::ok();
      }
    }
    // A computed shape of known length still fixes the rank: max(rank(x), length). A dim of x that is
    // fixed and not 1 is the output's (the shape's value there must be 1 or that dim); the rest unknown.
    const Dims* s = input_dims(node, 1);
    if (!s || s->size() != 1 || !(*s)[0].is_fixed()) return Status::ok();
    const size_t n = std::max(x->size(), static_cast<size_t>((*s)[0].value));
    Dims out(n, Dim::symbolic(""));
    for (size_t i = 0; i < x->size(); ++i) {
      const Dim& d = (*x)[i];
      if (d.is_fixed() && d.value != 1) out[n - x->size() + i] = d;
    }
    set_output_dims(node, 0, std::move(out));
    return Status::ok();
  }
  if (!x || !shape) return Status::ok();
  Dims target;
  for (int64_t s : *shape) {
    if (s < 0) return Status::ok();
    target.push_back(Dim::fixed(s));
  }
  Result<Dims> r = broadcast_dims(*x, target);
  if (!r.is_ok()) return r.status();
  set_output_dims(node, 0, std::move(r.value()));
  return Status::ok();
}

Status shape_split(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x || x->empty()) return Status::ok();
  const int64_t r = static_cast<int64_t>(x->size());
  int64_t axis = node.attr_int("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return invalid_argument("Split axis " + std::to_string(node.attr_int("axis", 0)) + " out of range for rank " + std::to_string(r));
  const int nout = node.num_outputs();
  // Sizes along the axis: the split input (opset 13 on) or attribute, else equal parts of a fixed dim
  // (opset 18's num_outputs: chunks of ceil(dim / n), the last smaller).
  std::optional<std::vector<int64_t>> sizes;
  if (node.num_inputs() > 1 && node.input(1)) sizes = constant_ints_input(node, 1);
  else if (node.attr("split")) sizes = node.attr_ints("split");
  const Dim& d = (*x)[static_cast<size_t>(axis)];
  const bool given = (node.num_inputs() > 1 && node.input(1)) || node.attr("split");
  if (!given && d.is_fixed() && nout > 0) {
    const int64_t chunk = (d.value + nout - 1) / nout;
    sizes = std::vector<int64_t>();
    for (int i = 0; i < nout; ++i) sizes->push_back(std::max<int64_t>(0, std::min(chunk, d.value - chunk * i)));
  }
  for (int o = 0; o < nout; ++o) {
    Dims out = *x;
    out[static_cast<size_t>(axis)] = sizes && static_cast<int>(sizes->size()) == nout && (*sizes)[static_cast<size_t>(o)] >= 0
                                         ? Dim::fixed((*sizes)[static_cast<size_t>(o)])
                                         : Dim::symbolic("");
    set_output_dims(node, o, std::move(out));
  }
  return Status::ok();
}

Status shape_slice(Node& node) {
  const Dims* x = input_dims(node, 0);
  if (!x) return Status::ok();
  const int64_t r = static_cast<int64_t>(x->size());
  // Opset 10 on: starts, ends, axes, steps are inputs; before, attributes (steps 1).
  const bool from_inputs = node.opset() >= 10;
  auto ints = [&](int input, const char* attr) -> std::optional<std::vector<int64_t>> {
    if (!from_inputs) return node.attr(attr) ? std::optional(node.attr_ints(attr)) : std::nullopt;
    return input < node.num_inputs() && node.input(input) ? constant_ints_input(node, input) : std::nullopt;
  };
  const bool has_axes = from_inputs ? node.num_inputs() > 3 && node.input(3) : node.attr("axes") != nullptr;
  std::optional<std::vector<int64_t>> axes = has_axes ? ints(3, "axes") : std::nullopt;
  // The rank is the data's whatever the bounds; dims are unknown on the sliced axes (all, when the
  // axes are not known) unless the bounds are constants and the dim is fixed.
  Dims out = *x;
  if (has_axes && !axes) {
    for (Dim& d : out) d = Dim::symbolic("");
    set_output_dims(node, 0, std::move(out));
    return Status::ok();
  }
  const std::optional<std::vector<int64_t>> starts = ints(1, "starts"), ends = ints(2, "ends");
  const bool has_steps = from_inputs && node.num_inputs() > 4 && node.input(4);
  const std::optional<std::vector<int64_t>> steps = has_steps ? ints(4, "steps") : std::nullopt;
  const size_t k = starts ? starts->size() : ends ? ends->size() : axes ? axes->size() : 0;
  std::vector<int64_t> ax = axes ? *axes : std::vector<int64_t>();
  if (!axes)
    for (size_t i = 0; i < k; ++i) ax.push_back(static_cast<int64_t>(i));
  const bool exact = starts && ends && (!has_steps || steps) && starts->size() == ax.size() && ends->size() == ax.size() &&
                     (!steps || steps->size() == ax.size());
  if (!starts || !ends) {
    // Bounds computed at run time: which axes they cut needs their count (the axes input, or a
    // fixed length of the starts input).
    if (!axes) {
      const Dims* sd = from_inputs && node.num_inputs() > 1 ? input_dims(node, 1) : nullptr;
      if (!sd || sd->size() != 1 || !(*sd)[0].is_fixed()) {
        for (Dim& d : out) d = Dim::symbolic("");
        set_output_dims(node, 0, std::move(out));
        return Status::ok();
      }
      ax.clear();
      for (int64_t i = 0; i < (*sd)[0].value; ++i) ax.push_back(i);
    }
  }
  // Bounds computed from shapes: [0, S) of a longer axis (a position table cut to the sequence's length) is
  // S; the rest unknown.
  std::optional<Dims> sym_starts, sym_ends;
  if (!exact && from_inputs && (!has_steps || (steps && std::all_of(steps->begin(), steps->end(), [](int64_t s) {
                                                  return s == 1;
                                                })))) {
    sym_starts = node.input(1) ? symbolic_vector(node.input(1)) : std::nullopt;
    sym_ends = node.num_inputs() > 2 && node.input(2) ? symbolic_vector(node.input(2)) : std::nullopt;
  }
  for (size_t i = 0; i < ax.size(); ++i) {
    int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
    if (a < 0 || a >= r) return invalid_argument("Slice axis " + std::to_string(ax[i]) + " out of range for rank " + std::to_string(r));
    Dim& d = out[static_cast<size_t>(a)];
    if (!exact && sym_starts && sym_ends && sym_starts->size() == ax.size() && sym_ends->size() == ax.size() &&
        is_int((*sym_starts)[i]) && (*sym_starts)[i].value == 0 && !(*sym_ends)[i].param.empty()) {
      d = (*sym_ends)[i];
      continue;
    }
    if (exact && !d.is_fixed() && (*starts)[i] == 0 && (*ends)[i] >= 1000000000 && (!steps || (*steps)[i] == 1))
      continue;  // the whole axis (exporters write INT_MAX or 10^9 as its end): the dim as it is
    if (!exact || !d.is_fixed()) {
      d = Dim::symbolic("");
      continue;
    }
    const int64_t dim = d.value, step = steps ? (*steps)[i] : 1;
    if (step == 0) return invalid_argument("Slice step 0");
    int64_t st = (*starts)[i], en = (*ends)[i];
    if (st < 0) st += dim;
    if (en < 0) en += dim;
    int64_t len;
    if (step > 0) {
      st = std::clamp<int64_t>(st, 0, dim);
      en = std::clamp<int64_t>(en, 0, dim);
      len = en > st ? (en - st + step - 1) / step : 0;
    } else {
      st = std::clamp<int64_t>(st, 0, dim - 1);
      en = std::clamp<int64_t>(en, -1, dim - 1);
      len = st > en ? (st - en + (-step) - 1) / (-step) : 0;
    }
    d = Dim::fixed(len);
  }
  set_output_dims(node, 0, std::move(out));
  return Status::ok();
}

Status shape_constant(Node& node) {
  for (const Attribute& a : node.attributes()) {
    if (a.name == "value" && a.t.defined()) {
      Dims d;
      for (int64_t v : a.t.shape().dims()) d.push_back(Dim::fixed(v));
      set_output_dims(node, 0, std::move(d));
    } else if (a.name == "value_int" || a.name == "value_float" || a.name == "value_string") {
      set_output_dims(node, 0, {});
    } else if (a.name == "value_ints") {
      set_output_dims(node, 0, {Dim::fixed(static_cast<int64_t>(a.ints.size()))});
    } else if (a.name == "value_floats") {
      set_output_dims(node, 0, {Dim::fixed(static_cast<int64_t>(a.floats.size()))});
    } else if (a.name == "value_strings") {
      set_output_dims(node, 0, {Dim::fixed(static_cast<int64_t>(a.strings.size()))});
    }
  }
  return Status::ok();
}

Status shape_range(Node& node) {
  const auto start = symbolic_scalar(node.input(0)), limit = symbolic_scalar(node.input(1));
  const auto delta = symbolic_scalar(node.input(2));
  if (!start || !limit || !delta || !delta->is_fixed() || delta->value == 0) return Status::ok();
  if (start->is_fixed() && limit->is_fixed()) {
    const int64_t span = limit->value - start->value, d = delta->value;
    const int64_t n = span / d + (span % d != 0 && (span > 0) == (d > 0) ? 1 : 0);
    set_output_dims(node, 0, {Dim::fixed(std::max<int64_t>(0, n))});
  } else if (delta->value == 1) {
    if (auto n = sub_dims(*limit, *start); n && (!n->is_fixed() || n->value >= 0)) set_output_dims(node, 0, {*n});
  }
  return Status::ok();
}

}  // namespace sdx::ir
