// ShapeFunctionOptimizations (pass 13): shape queries answered from static shapes, as int64 constants.
//   Shape(x, start, end)                       -> constant  when x's rank and dims [start, end) are fixed
//   Size(x)                                    -> constant  when every dim of x is fixed
//   Gather(Shape(x), constant indices, axis=0) -> constant  when the indexed dims are fixed, even if
//                                                           other dims are symbolic ([batch, seq, 768]
//                                                           gives Gather(Shape(x), 2) = 768)
//   Slice(Shape(x), constant starts/ends/axes/steps) -> constant  when the sliced dims are fixed
// Rank queries fold through the same rules: Shape(x) has the static shape [rank], so Size(Shape(x))
// and Shape(Shape(x)) become constants once x's rank is known. The folded constants then feed pass 2
// (constant propagation), which removes the downstream shape arithmetic.
// Static dims come from the declared graph input shapes (checked on every run) and shape inference.
// Order: after ConstantFunctionOptimizations (200) in the pipeline; the constants it makes are folded
// further by pass 2 in the next round.
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// The dims Shape(x, start, end) returns (fixed or not), or nullopt when x's rank is unknown.
std::optional<std::vector<ir::Dim>> shape_result_dims(const ir::Node& shape) {
  const ir::Value* x = shape.input(0);
  if (!x) return std::nullopt;
  std::vector<ir::Dim> dims;
  if (const Tensor* t = constant_value(x)) {
    for (int64_t d : t->shape().dims()) dims.push_back(ir::Dim::fixed(d));
  } else {
    if (x->type().kind != ir::TypeInfo::Kind::kTensor || !x->type().shape) return std::nullopt;
    dims = *x->type().shape;
  }
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t start = shape.attr_int("start", 0), end = shape.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  if (end <= start) return std::vector<ir::Dim>{};
  return std::vector<ir::Dim>(dims.begin() + start, dims.begin() + end);
}

// The values of `picked` dims when all are fixed.
std::optional<std::vector<int64_t>> fixed_values(const std::vector<ir::Dim>& dims, const std::vector<int64_t>& picked) {
  std::vector<int64_t> out;
  for (int64_t i : picked) {
    const ir::Dim& d = dims[static_cast<size_t>(i)];
    if (!d.is_fixed()) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

bool replace_with_ints(ir::Graph& g, ir::Node& n, const std::vector<int64_t>& values, const std::vector<int64_t>& dims,
                       const std::string& what, PassContext& ctx) {
  if (g.is_output(n.output(0))) return false;
  Tensor t = Tensor::allocate(DType::kInt64, Shape(dims)).value();
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  ir::Value* c = g.add_constant(n.name().empty() ? "shape_const" : n.name() + "_const", std::move(t));
  if (!forward_output(g, &n, c)) return false;
  return ctx.applied(n, what + " -> " + dims_to_string(values));
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

bool fold_shape(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  auto dims = shape_result_dims(n);
  if (!dims) return false;
  auto values = fixed_values(*dims, iota(static_cast<int64_t>(dims->size())));
  if (!values) return false;
  return replace_with_ints(g, n, *values, {static_cast<int64_t>(values->size())}, "Shape(x)", ctx);
}

bool fold_size(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  auto shape = static_shape(n.input(0));
  if (!shape) return false;
  int64_t numel = 1;
  for (int64_t d : *shape) {
    auto m = checked_mul(numel, d);
    if (!m.is_ok()) return false;
    numel = m.value();
  }
  return replace_with_ints(g, n, {numel}, {}, "Size(x)", ctx);
}

bool fold_gather_of_shape(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  ir::Node* shape = producer_of(n.input(0), "Shape");
  const Tensor* idx = constant_value(n.input(1));
  if (!shape || !idx || (idx->dtype() != DType::kInt64 && idx->dtype() != DType::kInt32)) return false;
  const int64_t axis = n.attr_int("axis", 0);
  if (axis != 0 && axis != -1) return false;
  auto dims = shape_result_dims(*shape);
  auto indices = constant_ints(n.input(1));
  if (!dims || !indices) return false;
  const auto len = static_cast<int64_t>(dims->size());
  for (int64_t& i : *indices) {
    if (i < -len || i >= len) return false;  // the original fails at run time: keep it
    if (i < 0) i += len;
  }
  auto values = fixed_values(*dims, *indices);
  if (!values) return false;
  return replace_with_ints(g, n, *values, idx->shape().dims(), "Gather(Shape(x), " + dims_to_string(*indices) + ")",
                           ctx);
}

bool fold_slice_of_shape(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  ir::Node* shape = producer_of(n.input(0), "Shape");
  if (!shape) return false;
  auto dims = shape_result_dims(*shape);
  if (!dims) return false;
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    auto s = constant_ints(n.input(1));
    auto e = constant_ints(n.input(2));
    if (!s || !e) return false;
    starts = *s;
    ends = *e;
    for (int k : {3, 4}) {
      if (n.num_inputs() <= k || !n.input(k)) continue;
      auto v = constant_ints(n.input(k));
      if (!v) return false;
      (k == 3 ? axes : steps) = *v;
    }
  }
  if (starts.size() != 1 || ends.size() != 1 || axes.size() > 1 || steps.size() > 1) return false;
  if (!axes.empty() && axes[0] != 0 && axes[0] != -1) return false;
  const int64_t step = steps.empty() ? 1 : steps[0];
  if (step == 0) return false;
  // ONNX Slice on a 1-D tensor of length len.
  const auto len = static_cast<int64_t>(dims->size());
  int64_t start = starts[0] < 0 ? starts[0] + len : starts[0];
  int64_t end = ends[0] < 0 ? ends[0] + len : ends[0];
  std::vector<int64_t> picked;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, len);
    end = std::clamp<int64_t>(end, 0, len);
    for (int64_t i = start; i < end; i = end - i <= step ? end : i + step) picked.push_back(i);
  } else {
    start = std::clamp<int64_t>(start, 0, len - 1);
    end = std::clamp<int64_t>(end, -1, len - 1);
    const int64_t back = step == INT64_MIN ? INT64_MAX : -step;
    for (int64_t i = start; i > end; i = i - end <= back ? end : i - back) picked.push_back(i);
  }
  auto values = fixed_values(*dims, picked);
  if (!values) return false;
  return replace_with_ints(g, n, *values, {static_cast<int64_t>(values->size())}, "Slice(Shape(x))", ctx);
}

class ShapeFunctionOptimizations final : public PatternPass {
 public:
  ShapeFunctionOptimizations() {
    add_rule({"Shape(x) -> constant", {"Shape"}, fold_shape});
    add_rule({"Size(x) -> constant", {"Size"}, fold_size});
    add_rule({"Gather(Shape(x), constant) -> constant", {"Gather"}, fold_gather_of_shape});
    add_rule({"Slice(Shape(x), constants) -> constant", {"Slice"}, fold_slice_of_shape});
  }
  const char* name() const override { return "ShapeFunctionOptimizations"; }
  PassCategory category() const override { return PassCategory::kConstant; }
};

const PassRegistrar kRegistrar("fold_shapes", [] { return std::make_unique<ShapeFunctionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
