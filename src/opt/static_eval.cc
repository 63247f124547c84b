#include "opt/static_eval.h"

#include <cmath>
#include <limits>

#include "core/tensor_values.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr int kMaxDepth = 32;
constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<StaticTensor> from_tensor(const Tensor& t, int64_t max_elements) {
  if (!dtype_is_byte_addressable(t.dtype()) || t.dtype() == DType::kString || t.numel() > max_elements)
    return std::nullopt;
  auto values = read_doubles(t, "constant", RealTypes::kNumericOrBool);
  if (!values.is_ok()) return std::nullopt;
  return StaticTensor{t.dtype(), t.shape().dims(), std::move(values).value()};
}

StaticTensor ints(std::vector<double> v, bool scalar) {
  StaticTensor t{DType::kInt64, {}, std::move(v)};
  if (!scalar) t.dims = {t.numel()};
  return t;
}

// Axis values of an Unsqueeze/Squeeze/Slice: from the attribute before `input_since`, else input `input`.
std::optional<std::vector<int64_t>> axes_of(const ir::Node& n, int input_since, int input, bool required) {
  if (n.opset() < input_since) {
    if (!n.attr("axes")) return required ? std::nullopt : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    return n.attr_ints("axes");
  }
  if (!n.input(input)) return required ? std::nullopt : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  return static_ints(n.input(input));
}

std::optional<StaticTensor> eval(const ir::Value* v, int depth, int64_t max);

std::optional<StaticTensor> broadcast_binary(const ir::Node& n, int depth, int64_t max) {
  auto a = eval(n.input(0), depth + 1, max);
  auto b = eval(n.input(1), depth + 1, max);
  if (!a || !b) return std::nullopt;
  const size_t rank = std::max(a->dims.size(), b->dims.size());
  std::vector<int64_t> da(rank, 1), db(rank, 1), out(rank);
  std::copy(a->dims.begin(), a->dims.end(), da.begin() + static_cast<long>(rank - a->dims.size()));
  std::copy(b->dims.begin(), b->dims.end(), db.begin() + static_cast<long>(rank - b->dims.size()));
  for (size_t i = 0; i < rank; ++i) {
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1) return std::nullopt;
    out[i] = da[i] == 1 ? db[i] : da[i];
  }
  if (product(out) > max) return std::nullopt;
  const std::string& op = n.op_type();
  const bool integer = dtype_is_int(a->dtype);
  StaticTensor r{a->dtype, out, std::vector<double>(static_cast<size_t>(product(out)))};
  std::vector<int64_t> idx(rank, 0);
  for (size_t k = 0; k < r.values.size(); ++k) {
    int64_t ia = 0, ib = 0;
    for (size_t i = 0; i < rank; ++i) {
      ia = ia * da[i] + (da[i] == 1 ? 0 : idx[i]);
      ib = ib * db[i] + (db[i] == 1 ? 0 : idx[i]);
    }
    const double x = a->values[static_cast<size_t>(ia)], y = b->values[static_cast<size_t>(ib)];
    double z;
    if (op == "Add")
      z = x + y;
    else if (op == "Sub")
      z = x - y;
    else if (op == "Mul")
      z = x * y;
    else if (integer && y == 0)
      return std::nullopt;
    else
      z = integer ? std::trunc(x / y) : x / y;
    r.values[k] = z;
    for (size_t i = rank; i-- > 0;)
      if (++idx[i] < out[i])
        break;
      else
        idx[i] = 0;
  }
  return r;
}

std::optional<StaticTensor> eval_slice(const ir::Node& n, int depth, int64_t max) {
  auto data = eval(n.input(0), depth + 1, max);
  if (!data) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    auto s = static_ints(n.input(1));
    auto e = static_ints(n.input(2));
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (n.input(3)) {
      auto a = static_ints(n.input(3));
      if (!a) return std::nullopt;
      axes = *a;
    }
    if (n.input(4)) {
      auto st = static_ints(n.input(4));
      if (!st) return std::nullopt;
      steps = *st;
    }
  }
  if (axes.empty())
    for (int64_t i = 0; i < static_cast<int64_t>(starts.size()); ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return std::nullopt;
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1), out = data->dims;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t ax = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (ax < 0 || ax >= rank || steps[k] <= 0) return std::nullopt;
    const int64_t dim = data->dims[static_cast<size_t>(ax)];
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    first[static_cast<size_t>(ax)] = s;
    step[static_cast<size_t>(ax)] = steps[k];
    out[static_cast<size_t>(ax)] = e > s ? (e - s + steps[k] - 1) / steps[k] : 0;
  }
  StaticTensor r{data->dtype, out, std::vector<double>(static_cast<size_t>(product(out)))};
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < r.values.size(); ++k) {
    int64_t src = 0;
    for (size_t i = 0; i < idx.size(); ++i) src = src * data->dims[i] + first[i] + idx[i] * step[i];
    r.values[k] = data->values[static_cast<size_t>(src)];
    for (size_t i = idx.size(); i-- > 0;)
      if (++idx[i] < out[i])
        break;
      else
        idx[i] = 0;
  }
  return r;
}

std::optional<StaticTensor> eval_node(const ir::Node& n, const ir::Value* v, int depth, int64_t max) {
  if (!n.domain().empty() || v->producer_output() != 0) return std::nullopt;
  const std::string& op = n.op_type();
  if (op == "Constant") {
    if (const ir::Attribute* a = n.attr("value")) return from_tensor(a->t, max);
    if (const ir::Attribute* a = n.attr("value_int")) return ints({static_cast<double>(a->i)}, true);
    if (const ir::Attribute* a = n.attr("value_ints")) {
      std::vector<double> d(a->ints.begin(), a->ints.end());
      return ints(std::move(d), false);
    }
    if (const ir::Attribute* a = n.attr("value_float")) return StaticTensor{DType::kFloat32, {}, {a->f}};
    return std::nullopt;
  }
  if (op == "Identity") return eval(n.input(0), depth + 1, max);
  if (op == "Shape") {
    const ir::Value* x = n.input(0);
    if (!x || x->type().kind != ir::TypeInfo::Kind::kTensor || !x->type().shape) return std::nullopt;
    const auto& dims = *x->type().shape;
    const int64_t rank = static_cast<int64_t>(dims.size());
    int64_t s = n.attr_int("start", 0), e = n.attr_int("end", rank);
    s = std::clamp<int64_t>(s < 0 ? s + rank : s, 0, rank);
    e = std::clamp<int64_t>(e < 0 ? e + rank : e, 0, rank);
    std::vector<double> d;
    for (int64_t i = s; i < e; ++i) {
      const ir::Dim& dim = dims[static_cast<size_t>(i)];
      d.push_back(dim.is_fixed() ? static_cast<double>(dim.value) : kUnknown);
    }
    return ints(std::move(d), false);
  }
  if (op == "Gather") {
    auto data = eval(n.input(0), depth + 1, max);
    auto idx = eval(n.input(1), depth + 1, max);
    const int64_t axis = n.attr_int("axis", 0);
    if (!data || !idx || data->dims.size() != 1 || (axis != 0 && axis != -1) || !idx->known()) return std::nullopt;
    StaticTensor r{data->dtype, idx->dims, {}};
    for (double i : idx->values) {
      int64_t k = static_cast<int64_t>(i);
      if (k < 0) k += data->numel();
      if (k < 0 || k >= data->numel()) return std::nullopt;
      r.values.push_back(data->values[static_cast<size_t>(k)]);
    }
    return r;
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Flatten") {
    auto x = eval(n.input(0), depth + 1, max);
    if (!x) return std::nullopt;
    std::vector<int64_t> dims;
    if (op == "Unsqueeze") {
      auto axes = axes_of(n, 13, 1, true);
      if (!axes) return std::nullopt;
      const int64_t rank = static_cast<int64_t>(x->dims.size() + axes->size());
      std::vector<bool> is_new(static_cast<size_t>(rank), false);
      for (int64_t a : *axes) {
        const int64_t k = a < 0 ? a + rank : a;
        if (k < 0 || k >= rank || is_new[static_cast<size_t>(k)]) return std::nullopt;
        is_new[static_cast<size_t>(k)] = true;
      }
      size_t src = 0;
      for (int64_t i = 0; i < rank; ++i) dims.push_back(is_new[static_cast<size_t>(i)] ? 1 : x->dims[src++]);
    } else if (op == "Squeeze") {
      auto axes = axes_of(n, 13, 1, false);
      if (!axes) return std::nullopt;
      const int64_t rank = static_cast<int64_t>(x->dims.size());
      std::vector<bool> drop(static_cast<size_t>(rank), axes->empty());
      for (int64_t a : *axes) {
        const int64_t k = a < 0 ? a + rank : a;
        if (k < 0 || k >= rank || x->dims[static_cast<size_t>(k)] != 1) return std::nullopt;
        drop[static_cast<size_t>(k)] = true;
      }
      for (int64_t i = 0; i < rank; ++i)
        if (!(drop[static_cast<size_t>(i)] && x->dims[static_cast<size_t>(i)] == 1))
          dims.push_back(x->dims[static_cast<size_t>(i)]);
    } else if (op == "Flatten") {
      const int64_t rank = static_cast<int64_t>(x->dims.size());
      int64_t axis = n.attr_int("axis", 1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis > rank) return std::nullopt;
      int64_t outer = 1;
      for (int64_t i = 0; i < axis; ++i) outer *= x->dims[static_cast<size_t>(i)];
      dims = {outer, x->numel() / std::max<int64_t>(outer, 1)};
    } else {
      if (n.opset() < 5) return std::nullopt;
      auto shape = static_ints(n.input(1));
      if (!shape) return std::nullopt;
      const bool allowzero = n.attr_int("allowzero", 0) != 0;
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < shape->size(); ++i) {
        int64_t d = (*shape)[i];
        if (d == 0 && !allowzero) {
          if (i >= x->dims.size()) return std::nullopt;
          d = x->dims[i];
        }
        if (d == -1) {
          if (infer >= 0) return std::nullopt;
          infer = static_cast<int64_t>(i);
        } else if (d < 0) {
          return std::nullopt;
        } else {
          known *= d;
        }
        dims.push_back(d);
      }
      if (infer >= 0) {
        if (known == 0 || x->numel() % known) return std::nullopt;
        dims[static_cast<size_t>(infer)] = x->numel() / known;
      }
    }
    if (product(dims) != x->numel()) return std::nullopt;
    x->dims = std::move(dims);
    return x;
  }
  if (op == "Cast") {
    auto x = eval(n.input(0), depth + 1, max);
    if (!x) return std::nullopt;
    const std::optional<DType> target = dtype_from_onnx(static_cast<int>(n.attr_int("to", 0)));
    if (!target) return std::nullopt;
    const DType to = *target;
    for (double& d : x->values) {
      if (std::isnan(d)) continue;
      if (to == DType::kBool)
        d = d != 0 ? 1 : 0;
      else if (dtype_is_int(to))
        d = std::trunc(d);
      else if (to == DType::kFloat32)
        d = static_cast<double>(static_cast<float>(d));
      else if (to != DType::kFloat64)
        return std::nullopt;
    }
    x->dtype = to;
    return x;
  }
  if (op == "Concat") {
    StaticTensor r;
    for (const ir::Value* in : n.inputs()) {
      auto x = eval(in, depth + 1, max);
      if (!x || x->dims.size() != 1) return std::nullopt;
      r.dtype = x->dtype;
      r.values.insert(r.values.end(), x->values.begin(), x->values.end());
    }
    r.dims = {r.numel()};
    return r;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return broadcast_binary(n, depth, max);
  if (op == "Neg") {
    auto x = eval(n.input(0), depth + 1, max);
    if (!x) return std::nullopt;
    for (double& d : x->values) d = -d;
    return x;
  }
  if (op == "Slice") return eval_slice(n, depth, max);
  return std::nullopt;
}

std::optional<StaticTensor> eval(const ir::Value* v, int depth, int64_t max) {
  if (!v || depth > kMaxDepth) return std::nullopt;
  if (const Tensor* t = constant_value(v)) return from_tensor(*t, max);
  if (v->is_graph_input() || !v->producer()) return std::nullopt;
  auto r = eval_node(*v->producer(), v, depth, max);
  if (r && r->numel() > max) return std::nullopt;
  return r;
}

}  // namespace

bool StaticTensor::known() const {
  for (double d : values)
    if (std::isnan(d)) return false;
  return true;
}

std::optional<StaticTensor> static_value(const ir::Value* v, int64_t max_elements) { return eval(v, 0, max_elements); }

std::optional<std::vector<int64_t>> static_ints(const ir::Value* v) {
  auto t = eval(v, 0, 64);
  if (!t || !dtype_is_int(t->dtype) || t->dims.size() > 1 || !t->known()) return std::nullopt;
  return std::vector<int64_t>(t->values.begin(), t->values.end());
}

}  // namespace sdx::opt
