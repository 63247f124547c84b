#include "opt/rewrite_util.h"

#include <algorithm>
#include <cstring>

#include "core/tensor_values.h"

namespace sdx::opt {

const Tensor* constant_value(const ir::Value* v) {
  if (!v || !v->is_initializer() || v->is_graph_input()) return nullptr;
  return &v->initializer();
}

std::optional<double> uniform_constant(const ir::Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || t->numel() == 0 || !dtype_is_byte_addressable(t->dtype()) || t->dtype() == DType::kString) return std::nullopt;
  auto values = read_doubles(*t, "constant");
  if (!values.is_ok()) return std::nullopt;
  const std::vector<double>& d = values.value();
  for (double x : d)
    if (!(x == d[0])) return std::nullopt;  // NaN never uniform
  return d[0];
}

std::optional<double> scalar_constant(const ir::Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || t->numel() != 1) return std::nullopt;
  return uniform_constant(v);
}

ir::Node* producer_of(const ir::Value* v, const std::string& op) {
  if (!v || !v->producer()) return nullptr;
  const ir::Node* p = v->producer();
  const size_t colon = op.find(':');
  const std::string domain = colon == std::string::npos ? "" : op.substr(0, colon);
  const std::string type = colon == std::string::npos ? op : op.substr(colon + 1);
  return p->op_type() == type && p->domain() == domain ? v->producer() : nullptr;
}

bool has_single_use(const ir::Graph& g, const ir::Value* v) { return v && v->users().size() == 1 && !g.is_output(v); }

bool only_used_within(const ir::Graph& g, const std::vector<ir::Node*>& nodes, const ir::Node* last) {
  for (const ir::Node* n : nodes) {
    if (n == last) continue;
    for (const ir::Value* v : n->outputs()) {
      if (!v) continue;
      if (g.is_output(v)) return false;
      for (const ir::Node* u : v->users())
        if (std::find(nodes.begin(), nodes.end(), u) == nodes.end()) return false;
    }
  }
  return true;
}

bool forward_output(ir::Graph& g, ir::Node* n, ir::Value* replacement) {
  if (n->num_outputs() < 1 || !n->output(0) || !replacement) return false;
  for (int i = 1; i < n->num_outputs(); ++i)
    if (n->output(i) && (!n->output(i)->users().empty() || g.is_output(n->output(i)))) return false;
  ir::Value* out = n->output(0);
  if (g.is_output(out)) return false;
  const auto& a = out->type();
  const auto& b = replacement->type();
  if (a.kind != b.kind || (a.elem != DType::kUndefined && b.elem != DType::kUndefined && a.elem != b.elem)) return false;
  g.replace_all_uses(out, replacement);
  g.remove_node(n);
  return true;
}

ir::Node* fuse(ir::Graph& g, const std::vector<ir::Node*>& nodes, ir::Node* last, const std::string& op,
               const std::string& domain, int opset, const std::vector<ir::Value*>& inputs,
               std::vector<ir::Attribute> attrs) {
  std::vector<ir::Value*> outs = last->outputs();
  const int version = opset > 0 ? opset : last->opset();
  const std::string name = last->name().empty() ? g.unique_name(op) : last->name();
  for (ir::Node* n : nodes) g.remove_node(n);
  ir::Node* f = g.add_node_with_outputs(op, domain, name, inputs, outs);
  f->set_opset(version);
  for (ir::Attribute& a : attrs) f->add_attribute(std::move(a));
  return f;
}

ir::Attribute attr_int(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInt;
  a.i = v;
  return a;
}
ir::Attribute attr_float(const std::string& name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kFloat;
  a.f = v;
  return a;
}
ir::Attribute attr_ints(const std::string& name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute attr_string(const std::string& name, const std::string& v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::AttrType::kString;
  a.s = v;
  return a;
}

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

DType elem_type(const ir::Value* v) {
  if (!v) return DType::kUndefined;
  if (const Tensor* t = constant_value(v)) return t->dtype();
  if (v->type().kind != ir::TypeInfo::Kind::kTensor) return DType::kUndefined;
  return v->type().elem;
}

std::optional<std::vector<int64_t>> static_shape(const ir::Value* v) {
  if (!v) return std::nullopt;
  if (const Tensor* t = constant_value(v)) return t->shape().dims();
  const auto& ty = v->type();
  if (ty.kind != ir::TypeInfo::Kind::kTensor || !ty.shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const ir::Dim& d : *ty.shape) {
    if (!d.is_fixed()) return std::nullopt;
    dims.push_back(d.value);
  }
  return dims;
}

std::optional<int> static_rank(const ir::Value* v) {
  if (!v) return std::nullopt;
  if (const Tensor* t = constant_value(v)) return t->rank();
  const auto& ty = v->type();
  if (ty.kind != ir::TypeInfo::Kind::kTensor || !ty.shape) return std::nullopt;
  return static_cast<int>(ty.shape->size());
}

std::optional<int64_t> fixed_dim(const ir::Value* v, int axis) {
  if (!v || axis < 0) return std::nullopt;
  if (const Tensor* t = constant_value(v)) {
    if (axis >= t->rank()) return std::nullopt;
    return t->shape()[axis];
  }
  const auto& ty = v->type();
  if (ty.kind != ir::TypeInfo::Kind::kTensor || !ty.shape || axis >= static_cast<int>(ty.shape->size()))
    return std::nullopt;
  const ir::Dim& d = (*ty.shape)[static_cast<size_t>(axis)];
  return d.is_fixed() ? std::optional<int64_t>(d.value) : std::nullopt;
}

std::optional<std::vector<int64_t>> constant_ints(const ir::Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || !dtype_is_int(t->dtype()) || !dtype_is_byte_addressable(t->dtype())) return std::nullopt;
  auto values = read_int64s(*t, "constant");
  if (!values.is_ok()) return std::nullopt;
  return std::move(values).value();
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::kString) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
    return true;
  }
  const size_t n = a.nbytes();
  return n == b.nbytes() && (n == 0 || a.raw_data() == b.raw_data() || std::memcmp(a.raw_data(), b.raw_data(), n) == 0);
}

bool same_attribute(const ir::Attribute& a, const ir::Attribute& b) {
  if (a.name != b.name || a.type != b.type) return false;
  auto same_floats = [](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
  };
  switch (a.type) {
    case ir::AttrType::kFloat: return std::memcmp(&a.f, &b.f, sizeof(float)) == 0;
    case ir::AttrType::kInt: return a.i == b.i;
    case ir::AttrType::kString: return a.s == b.s;
    case ir::AttrType::kTensor: return a.t.defined() && b.t.defined() && same_tensor(a.t, b.t);
    case ir::AttrType::kGraph: return a.g == b.g;
    case ir::AttrType::kFloats: return same_floats(a.floats, b.floats);
    case ir::AttrType::kInts: return a.ints == b.ints;
    case ir::AttrType::kStrings: return a.strings == b.strings;
    case ir::AttrType::kTensors:
      if (a.tensors.size() != b.tensors.size()) return false;
      for (size_t i = 0; i < a.tensors.size(); ++i)
        if (!same_tensor(a.tensors[i], b.tensors[i])) return false;
      return true;
    case ir::AttrType::kGraphs: return a.graphs == b.graphs;
    case ir::AttrType::kTypeProto:
      return a.tp.to_string() == b.tp.to_string() && a.tp.shape_string() == b.tp.shape_string();
    default: return false;
  }
}

bool same_attributes(const ir::Node& a, const ir::Node& b) {
  if (a.attributes().size() != b.attributes().size()) return false;
  for (const ir::Attribute& x : a.attributes()) {
    const ir::Attribute* y = b.attr(x.name);
    if (!y || !same_attribute(x, *y)) return false;
  }
  return true;
}

}  // namespace sdx::opt
