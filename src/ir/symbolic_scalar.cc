#include "ir/symbolic_scalar.h"

#include <algorithm>
#include <string>

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
  if (op == "Add" || op == "Sub") {
    auto a = scalar_at(p->input(0), depth + 1);
    auto b = a ? scalar_at(p->input(1), depth + 1) : std::nullopt;
    if (!b) return std::nullopt;
    return op == "Add" ? add_dims(*a, *b) : sub_dims(*a, *b);
  }
  return std::nullopt;
}

}  // namespace

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
