#include "opt/fusion_util.h"

#include <cmath>
#include <limits>

#include "core/tensor_values.h"
#include "ir/activation.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {

std::optional<int> rank_of(const ir::Value* v) {
  if (!v) return std::nullopt;
  if (const Tensor* t = constant_value(v)) return t->rank();
  const auto& ty = v->type();
  if (ty.kind != ir::TypeInfo::Kind::kTensor || !ty.shape) return std::nullopt;
  return static_cast<int>(ty.shape->size());
}

ir::Value* other_input(const ir::Node* n, const ir::Value* v) {
  if (!n || n->num_inputs() != 2) return nullptr;
  if (n->input(0) == v) return n->input(1);
  if (n->input(1) == v) return n->input(0);
  return nullptr;
}

std::optional<double> scalar_like(const ir::Value* c, const ir::Value* x) {
  const Tensor* t = constant_value(c);
  if (!t || t->numel() != 1 || !x) return std::nullopt;
  if (elem_type(x) != t->dtype()) return std::nullopt;
  // A rank-0 constant never changes the shape it broadcasts against, whatever x's rank; others must
  // not outrank x.
  auto r = rank_of(x);
  if (t->rank() > 0 && (!r || t->rank() > *r)) return std::nullopt;
  return scalar_constant(c);
}

std::pair<ir::Value*, std::optional<double>> scalar_operand(const ir::Node* n) {
  if (!n || n->num_inputs() != 2) return {nullptr, std::nullopt};
  for (int i : {1, 0}) {
    ir::Value* other = n->input(1 - i);
    if (auto c = scalar_like(n->input(i), other)) return {other, c};
  }
  return {nullptr, std::nullopt};
}

bool near(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::fabs(b); }

std::optional<std::vector<int64_t>> reduce_axes_keepdims(const ir::Node& reduce) {
  if (reduce.attr_int("keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (reduce.opset() >= 18 || (reduce.op_type() == "ReduceSum" && reduce.opset() >= 13)) {
    if (reduce.num_inputs() < 2 || !reduce.input(1)) return std::nullopt;
    const Tensor* t = constant_value(reduce.input(1));
    if (!t || (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32)) return std::nullopt;
    auto v = read_int64s(*t, "axes");
    if (!v.is_ok()) return std::nullopt;
    axes = v.value();
  } else {
    if (reduce.num_inputs() != 1) return std::nullopt;
    axes = reduce.attr_ints("axes");
  }
  if (axes.empty()) return std::nullopt;
  return axes;
}

bool is_last_axis(const std::vector<int64_t>& axes, int rank) {
  if (axes.size() != 1) return false;
  return axes[0] == -1 || (rank > 0 && axes[0] == rank - 1);
}

std::vector<ir::Attribute> EpilogueActivation::attributes() const {
  std::vector<ir::Attribute> a = {attr_string("activation", name)};
  for (const auto& [attr, values] : {std::pair{"activation_params", &params}, std::pair{"activation_clamp", &clamp},
                                     std::pair{"activation_affine", &affine}}) {
    if (values->empty()) continue;
    ir::Attribute f;
    f.name = attr;
    f.type = ir::AttrType::kFloats;
    f.floats = *values;
    a.push_back(std::move(f));
  }
  return a;
}

namespace {
// A constant Clip bound (an omitted input: the default); nullopt when not constant or when a
// float cannot hold it exactly (the epilogue keeps bounds as floats).
std::optional<float> clip_bound(const ir::Node& n, int i, float def) {
  if (n.num_inputs() <= i || !n.input(i)) return def;
  const Tensor* t = constant_value(n.input(i));
  if (!t || t->numel() != 1 || !is_float(t->dtype())) return std::nullopt;
  auto v = scalar_constant(n.input(i));
  if (!v) return std::nullopt;
  const float f = static_cast<float>(*v);
  if (static_cast<double>(f) != *v) return std::nullopt;
  return f;
}

// The [lo, hi] of a clamp node reading v: Clip(v) with constant bounds, Max(v, c) / Min(v, c) (or
// c first when c is not zero), c a scalar constant a float holds exactly; nullopt otherwise.
std::optional<std::vector<float>> clamp_of(const ir::Node& n, const ir::Value* v) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (!n.domain().empty() || n.num_outputs() != 1) return std::nullopt;
  const std::string& op = n.op_type();
  if (op == "Clip") {
    auto e = epilogue_activation(n);
    if (!e || n.input(0) != v) return std::nullopt;
    return e->params;
  }
  if ((op != "Max" && op != "Min") || n.num_inputs() != 2) return std::nullopt;
  const int at = n.input(0) == v ? 0 : n.input(1) == v ? 1 : -1;
  if (at < 0 || n.input(1 - at) == v) return std::nullopt;
  auto c = scalar_like(n.input(1 - at), v);
  if (!c) return std::nullopt;
  const float f = static_cast<float>(*c);
  if (static_cast<double>(f) != *c && !std::isnan(*c)) return std::nullopt;
  if (at == 1 && f == 0.f) return std::nullopt;
  return op == "Max" ? std::vector<float>{f, kInf} : std::vector<float>{-kInf, f};
}

// The scalar constant operand of a two-input Mul / Add `n` reading v once, when a float holds it
// exactly and the op has v's shape and element type.
std::optional<float> exact_scalar_operand(const ir::Node& n, const ir::Value* v) {
  if (!n.domain().empty() || n.num_inputs() != 2 || n.num_outputs() != 1) return std::nullopt;
  const int at = n.input(0) == v ? 0 : n.input(1) == v ? 1 : -1;
  if (at < 0 || n.input(1 - at) == v || elem_type(n.output(0)) != elem_type(v)) return std::nullopt;
  auto c = scalar_like(n.input(1 - at), v);
  if (!c) return std::nullopt;
  const float f = static_cast<float>(*c);
  if (static_cast<double>(f) != *c) return std::nullopt;
  return f;
}

// The affine map the nodes reading v apply: Mul(v, a) [then Add(., b)], or Add(v, b), each the
// single reader of the value before it. Appends the matched nodes to `nodes`.
std::optional<std::vector<float>> affine_of(const ir::Graph& g, const ir::Value* v, std::vector<ir::Node*>& nodes) {
  ir::Node* n = only_reader(g, v);
  if (!n) return std::nullopt;
  if (n->op_type() == "Add") {
    auto b = exact_scalar_operand(*n, v);
    if (!b) return std::nullopt;
    nodes.push_back(n);
    return std::vector<float>{1.f, *b};
  }
  if (n->op_type() != "Mul") return std::nullopt;
  auto a = exact_scalar_operand(*n, v);
  if (!a) return std::nullopt;
  nodes.push_back(n);
  ir::Node* add = only_reader(g, n->output(0));
  std::optional<float> b;
  if (add && add->op_type() == "Add") b = exact_scalar_operand(*add, n->output(0));
  if (!b) return std::vector<float>{*a, -0.f};  // x * a + -0 is x * a, -0 included
  nodes.push_back(add);
  return std::vector<float>{*a, *b};
}
}  // namespace

ir::Node* only_reader(const ir::Graph& g, const ir::Value* v) { return has_single_use(g, v) ? v->users()[0] : nullptr; }

Epilogue match_epilogue(const ir::Graph& g, ir::Node& producer, const std::string& producer_what, bool allow_bias,
                        int rank, int axis, int64_t n, DType dt, bool allow_clamp, bool allow_affine) {
  Epilogue e;
  e.chain = {&producer};
  e.last = &producer;
  e.what = producer_what;
  ir::Node* next = only_reader(g, producer.output(0));
  if (allow_bias && next && next->op_type() == "Add" && next->domain().empty() && next->num_inputs() == 2) {
    ir::Value* b = other_input(next, producer.output(0));
    if (b && b != producer.output(0)) e.bias = per_axis_constant(b, rank, axis, n, dt);
    if (e.bias) {
      e.bias_operand = b;
      e.chain.push_back(next);
      e.last = next;
      e.what = "Add(" + e.what + ", b)";
      next = only_reader(g, next->output(0));
    }
  }
  if (next && next->input(0) == e.last->output(0)) e.activation = epilogue_activation(*next);
  if (e.activation) {
    e.chain.push_back(next);
    e.last = next;
    e.what = next->op_type() + "(" + e.what + ")";
    const bool clampable = e.activation->name == "relu" || e.activation->name == "leaky_relu";
    ir::Node* after = only_reader(g, next->output(0));
    if (allow_clamp && clampable && after && (dt == DType::kFloat32 || dt == DType::kFloat64) &&
        elem_type(after->output(0)) == dt) {
      if (auto c = clamp_of(*after, next->output(0))) {
        e.activation->clamp = *c;
        e.chain.push_back(after);
        e.last = after;
        e.what = after->op_type() + "(" + e.what + ")";
      }
    }
    const bool affine_ok = e.activation->name == "hard_swish" || e.activation->name == "relu";
    std::vector<ir::Node*> nodes;
    if (allow_affine && affine_ok && e.activation->clamp.empty() && (dt == DType::kFloat32 || dt == DType::kFloat64)) {
      if (auto a = affine_of(g, next->output(0), nodes)) {
        e.activation->affine = *a;
        for (ir::Node* m : nodes) {
          e.chain.push_back(m);
          e.last = m;
          e.what = m->op_type() + "(" + e.what + ", c)";
        }
      }
    }
  }
  return e;
}

std::optional<EpilogueActivation> epilogue_activation(const ir::Node& n) {
  if (!n.domain().empty() || n.num_outputs() != 1) return std::nullopt;
  const std::string& op = n.op_type();
  if (op == "Gelu") {  // two rows: the `approximate` attribute picks one
    const std::string a = n.attr_string("approximate", "none");
    if (a == "none") return EpilogueActivation{"gelu", {}, {}, {}};
    if (a == "tanh") return EpilogueActivation{"gelu_tanh", {}, {}, {}};
    return std::nullopt;
  }
  if (op == "Clip") {  // bounds from attributes before opset 11, from constant inputs after
    constexpr float kInf = std::numeric_limits<float>::infinity();
    if (n.opset() < 11) {
      if (n.num_inputs() != 1) return std::nullopt;
      return EpilogueActivation{"clip", {n.attr_float("min", -kInf), n.attr_float("max", kInf)}, {}, {}};
    }
    auto lo = clip_bound(n, 1, -kInf), hi = clip_bound(n, 2, kInf);
    if (!lo || !hi) return std::nullopt;
    return EpilogueActivation{"clip", {*lo, *hi}, {}, {}};
  }
  // The other rows of ir/activation_defs.inc: each parameter read from its attribute, or its default.
  for (const ir::ActivationInfo& a : ir::activations()) {
    if (a.onnx_op != op) continue;
    EpilogueActivation e{std::string(a.name), {}, {}, {}};
    for (int i = 0; i < a.max_params; ++i)
      e.params.push_back(n.attr_float(std::string(a.params[i].attribute), a.params[i].default_value));
    // Swish with alpha 1 is plain SiLU: written without parameters, as the fused ops have always had it.
    if (a.kind == ir::ActivationKind::kSilu && e.params[0] == 1.f) e.params.clear();
    return e;
  }
  return std::nullopt;
}

Tensor float_tensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t = Tensor::allocate(dtype, shape).value();
  (void)dispatch<SDX_FLOAT_TYPES>(
      dtype,
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        T* p = t.data<T>();
        for (size_t i = 0; i < values.size(); ++i) p[i] = store_as<T>(values[i]);
        return Status::ok();
      },
      "float_tensor");
  return t;
}

std::vector<double> float_values(const Tensor& t) {
  if (!is_float(t.dtype())) return {};
  auto v = read_doubles(t, "constant", RealTypes::kFloat);
  return v.is_ok() ? v.value() : std::vector<double>{};
}

std::optional<std::vector<double>> per_axis_constant(const ir::Value* c, int rank, int axis, int64_t size,
                                                     DType dtype) {
  const Tensor* t = constant_value(c);
  if (!t || t->dtype() != dtype || t->rank() > rank || axis < 0 || axis >= rank) return std::nullopt;
  // Right-aligned: dim d of t is dim d + (rank - t->rank()) of the result.
  const int shift = rank - t->rank();
  for (int d = 0; d < t->rank(); ++d) {
    const int64_t n = t->shape()[d];
    if (d + shift == axis ? (n != size && n != 1) : n != 1) return std::nullopt;
  }
  std::vector<double> v = float_values(*t);
  if (v.empty() && t->numel() != 0) return std::nullopt;
  if (static_cast<int64_t>(v.size()) == size) return v;
  if (v.size() == 1) return std::vector<double>(static_cast<size_t>(size), v[0]);
  return std::nullopt;
}

}  // namespace sdx::opt
