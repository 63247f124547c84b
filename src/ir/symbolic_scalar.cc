#include "ir/symbolic_scalar.h"

#include <algorithm>
#include <string>

#include "ir/dim_product.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace sdx::ir {
namespace {

constexpr int kMaxDepth = 16;  // producer chains followed

std::string spelled(const Dim& d) { return d.is_fixed() ? std::to_string(d.value) : d.param; }
bool known(const Dim& d) { return d.is_fixed() || !d.param.empty(); }

std::optional<Dim> one_int(const Tensor& t) {
  if (!t.defined() || t.numel() != 1) return std::nullopt;
  if (t.dtype() == DType::kInt64) return Dim::fixed(t.data<int64_t>()[0]);
  if (t.dtype() == DType::kInt32) return Dim::fixed(t.data<int32_t>()[0]);
  return std::nullopt;
}

// Element `index` of the 1-D value Shape(x)[start:end].
std::optional<Dim> shape_element(const Node& shape, int64_t index) {
  const Dims* x = input_dims(shape, 0);
  if (!x) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x->size());
  int64_t start = shape.attr_int("start", 0), end = shape.attr_int("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  if (index < 0) index += end - start;
  if (index < 0 || index >= end - start) return std::nullopt;
  const Dim& d = (*x)[static_cast<size_t>(start + index)];
  if (!known(d)) return std::nullopt;
  return d;
}

std::optional<Dim> scalar_at(const Value* v, int depth) {
  if (!v || depth > kMaxDepth) return std::nullopt;
  if (v->is_initializer()) return v->is_graph_input() ? std::nullopt : one_int(v->initializer());
  const Node* p = v->producer();
  if (!p || !normalize_domain(p->domain()).empty()) return std::nullopt;
  const std::string& op = p->op_type();
  if (op == "Constant") {
    if (const Attribute* a = p->attr("value_int")) return Dim::fixed(a->i);
    if (const Attribute* a = p->attr("value_ints"); a && a->ints.size() == 1) return Dim::fixed(a->ints[0]);
    if (const Attribute* a = p->attr("value")) return one_int(a->t);
    return std::nullopt;
  }
  if (op == "Identity" || op == "Squeeze" || op == "Unsqueeze" || op == "Cast") {
    if (op == "Cast") {
      const int64_t to = p->attr_int("to", 0);  // TensorProto: INT32 6, INT64 7
      if (to != 6 && to != 7) return std::nullopt;
    }
    return scalar_at(p->input(0), depth + 1);
  }
  if (op == "Gather") {
    const Value* data = p->input(0);
    const Node* shape = data ? data->producer() : nullptr;
    if (!shape || shape->op_type() != "Shape" || !normalize_domain(shape->domain()).empty()) return std::nullopt;
    auto index = scalar_at(p->input(1), depth + 1);
    if (!index || !index->is_fixed()) return std::nullopt;
    return shape_element(*shape, index->value);
  }
  if (op == "Mul") {  // sizes, or symbols times sizes ("6*s6": ir/dim_product.h)
    auto a = scalar_at(p->input(0), depth + 1);
    auto b = a ? scalar_at(p->input(1), depth + 1) : std::nullopt;
    if (!b) return std::nullopt;
    auto pa = parse_product(*a), pb = parse_product(*b);
    auto m = pa && pb ? multiply(*pa, *pb) : std::nullopt;
    if (!m) return std::nullopt;
    return spell(*m);
  }
  if (op == "Add" || op == "Sub") {
    auto a = scalar_at(p->input(0), depth + 1);
    auto b = a ? scalar_at(p->input(1), depth + 1) : std::nullopt;
    if (!b) return std::nullopt;
    return op == "Add" ? add_dims(*a, *b) : sub_dims(*a, *b);
  }
  return std::nullopt;
}

// A constant integer as an element: INT64_MIN (exporters' "from the very start" for Slice's starts) would read
// as kUnknownInt, so it is INT64_MIN + 1, the same bound everywhere a bound is clamped (no size is negative).
Dim int_element(int64_t x) { return Dim{x == kUnknownInt ? kUnknownInt + 1 : x, {}}; }

std::optional<std::vector<Dim>> ints_of(const Tensor& t) {
  if (!t.defined() || t.rank() > 1) return std::nullopt;
  std::vector<Dim> out;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kInt64) out.push_back(int_element(t.data<int64_t>()[i]));
    else if (t.dtype() == DType::kInt32) out.push_back(Dim{t.data<int32_t>()[i], {}});
    else return std::nullopt;
  }
  return out;
}

std::optional<std::vector<Dim>> vector_at(const Value* v, int depth) {
  if (!v || depth > kMaxDepth) return std::nullopt;
  if (v->is_initializer()) return v->is_graph_input() ? std::nullopt : ints_of(v->initializer());
  const Node* p = v->producer();
  if (!p || !normalize_domain(p->domain()).empty()) return std::nullopt;
  const std::string& op = p->op_type();
  if (op == "Constant") {
    if (const Attribute* a = p->attr("value_ints")) {
      std::vector<Dim> out;
      for (int64_t x : a->ints) out.push_back(int_element(x));
      return out;
    }
    if (const Attribute* a = p->attr("value")) return ints_of(a->t);
    return std::nullopt;
  }
  if (op == "Shape") {
    const Dims* x = input_dims(*p, 0);
    if (!x) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(x->size());
    int64_t start = p->attr_int("start", 0), end = p->attr_int("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    std::vector<Dim> out(x->begin() + start, x->begin() + std::max(start, end));
    for (Dim& d : out)
      if (!known(d)) d = Dim{kUnknownInt, {}};
    return out;
  }
  if (op == "Identity" || op == "Cast") {
    if (op == "Cast" && p->attr_int("to", 0) != 6 && p->attr_int("to", 0) != 7) return std::nullopt;
    return vector_at(p->input(0), depth + 1);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {  // of a scalar (or one element): one element
    if (auto d = scalar_at(v, depth)) return std::vector<Dim>{*d};
    const Dims* x = input_dims(*p, 0);
    if (op == "Unsqueeze" && x && x->empty()) return std::vector<Dim>{Dim{kUnknownInt, {}}};  // a scalar not followed
    return std::nullopt;
  }
  if (op == "Concat") {
    if (p->attr_int("axis", 0) != 0 && p->attr_int("axis", 0) != -1) return std::nullopt;
    std::vector<Dim> out;
    for (const Value* in : p->inputs()) {
      auto part = vector_at(in, depth + 1);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  if (op == "Gather") {
    if (p->attr_int("axis", 0) != 0) return std::nullopt;
    auto data = vector_at(p->input(0), depth + 1);
    auto index = data ? vector_at(p->input(1), depth + 1) : std::nullopt;
    if (!index) return std::nullopt;
    std::vector<Dim> out;
    const int64_t n = static_cast<int64_t>(data->size());
    for (const Dim& i : *index) {
      if (!is_int(i)) return std::nullopt;
      const int64_t at = i.value < 0 ? i.value + n : i.value;
      if (at < 0 || at >= n) return std::nullopt;
      out.push_back((*data)[static_cast<size_t>(at)]);
    }
    return out;
  }
  if (op == "Slice" && p->num_inputs() >= 3) {
    auto data = vector_at(p->input(0), depth + 1);
    auto starts = data ? vector_at(p->input(1), depth + 1) : std::nullopt;
    auto ends = starts ? vector_at(p->input(2), depth + 1) : std::nullopt;
    if (!ends || starts->size() != 1 || ends->size() != 1 || !is_int((*starts)[0]) || !is_int((*ends)[0]))
      return std::nullopt;
    for (int i = 3; i < p->num_inputs(); ++i) {  // axes {0}, steps {1} only
      auto x = p->input(i) ? vector_at(p->input(i), depth + 1) : std::nullopt;
      if (p->input(i) && (!x || x->size() != 1 || !is_int((*x)[0]) || (*x)[0].value != (i == 3 ? 0 : 1)))
        return std::nullopt;
    }
    const int64_t n = static_cast<int64_t>(data->size());
    int64_t b = (*starts)[0].value, e = (*ends)[0].value;
    b = std::clamp<int64_t>(b < 0 ? b + n : b, 0, n);
    e = std::clamp<int64_t>(e < 0 ? e + n : e, 0, n);
    return std::vector<Dim>(data->begin() + b, data->begin() + std::max(b, e));
  }
  if (op == "Reshape") {  // a vector flattened ([-1]) stays itself
    auto t = vector_at(p->input(1), depth + 1);
    if (t && t->size() == 1 && is_int((*t)[0]) && (*t)[0].value == -1) return vector_at(p->input(0), depth + 1);
    return std::nullopt;
  }
  if (op == "ConstantOfShape") {  // [n] of a known integer value
    auto n = vector_at(p->input(0), depth + 1);
    const Attribute* a = p->attr("value");
    auto value = a ? one_int(a->t) : std::optional<Dim>(Dim::fixed(0));
    if (!n || n->size() != 1 || !(*n)[0].is_fixed() || !value || (*n)[0].value > 64) return std::nullopt;
    return std::vector<Dim>(static_cast<size_t>((*n)[0].value), *value);
  }
  if (op == "Equal" || op == "Mul" || op == "Where") {
    // Element by element (broadcasting one element), as exporters compute an Expand's target:
    // Where(Equal(shape, -1), ones, shape). Equal is 1 / 0; a size (a symbol) never equals a negative number.
    std::vector<std::vector<Dim>> in;
    size_t n = 1;
    for (const Value* x : p->inputs()) {
      auto e = vector_at(x, depth + 1);
      if (!e || e->empty()) return std::nullopt;
      if (e->size() != 1 && n != 1 && e->size() != n) return std::nullopt;
      n = std::max(n, e->size());
      in.push_back(std::move(*e));
    }
    auto at = [&](size_t k, size_t i) -> const Dim& { return in[k].size() == 1 ? in[k][0] : in[k][i]; };
    std::vector<Dim> out;
    for (size_t i = 0; i < n; ++i) {
      if (op == "Equal") {
        const Dim &x = at(0, i), &y = at(1, i);
        if (is_int(x) && is_int(y)) out.push_back(Dim::fixed(x.value == y.value ? 1 : 0));
        else if (!x.param.empty() && !y.param.empty() && x.param == y.param) out.push_back(Dim::fixed(1));
        else if ((!x.param.empty() && is_int(y) && y.value < 0) || (!y.param.empty() && is_int(x) && x.value < 0))
          out.push_back(Dim::fixed(0));
        else out.push_back(Dim{kUnknownInt, {}});
      } else if (op == "Mul") {
        const Dim &x = at(0, i), &y = at(1, i);
        auto size = [](const Dim& d) { return d.param.empty() && d.value < 0 ? std::nullopt : parse_product(d); };
        auto px = size(x), py = size(y);
        auto m = px && py ? multiply(*px, *py) : std::nullopt;
        if (is_int(x) && is_int(y)) out.push_back(Dim{x.value * y.value, {}});
        else if (is_int(x) && x.value == 1) out.push_back(y);
        else if (is_int(y) && y.value == 1) out.push_back(x);
        else if (m) out.push_back(spell(*m));
        else out.push_back(Dim{kUnknownInt, {}});
      } else {
        const Dim& c = at(0, i);
        if (!is_int(c)) out.push_back(Dim{kUnknownInt, {}});
        else out.push_back(c.value ? at(1, i) : at(2, i));
      }
    }
    return out;
  }
  if (auto d = scalar_at(v, depth)) return std::vector<Dim>{*d};  // Add / Sub of one element (never negative)
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<Dim>> symbolic_vector(const Value* v) { return vector_at(v, 0); }

std::optional<Dim> add_dims(const Dim& a, const Dim& b) {
  if (!known(a) || !known(b)) return std::nullopt;
  if (a.is_fixed() && b.is_fixed()) return Dim::fixed(a.value + b.value);
  if (a.is_fixed() && a.value == 0) return b;
  if (b.is_fixed() && b.value == 0) return a;
  return Dim::symbolic(spelled(a) + " + " + spelled(b));
}

std::optional<Dim> sub_dims(const Dim& a, const Dim& b) {
  if (!known(a) || !known(b)) return std::nullopt;
  if (a.is_fixed() && b.is_fixed()) return Dim::fixed(a.value - b.value);
  if (b.is_fixed() && b.value == 0) return a;
  if (a.is_fixed()) return std::nullopt;
  if (!b.is_fixed() && a.param == b.param) return Dim::fixed(0);
  const std::string tail = " + " + spelled(b), head = spelled(b) + " + ";
  if (a.param.size() > tail.size() && a.param.compare(a.param.size() - tail.size(), tail.size(), tail) == 0)
    return Dim::symbolic(a.param.substr(0, a.param.size() - tail.size()));
  if (a.param.size() > head.size() && a.param.compare(0, head.size(), head) == 0)
    return Dim::symbolic(a.param.substr(head.size()));
  return std::nullopt;
}

std::optional<Dim> symbolic_scalar(const Value* v) { return scalar_at(v, 0); }

}  // namespace sdx::ir
