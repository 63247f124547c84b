// ConcatSplitOptimizations (pass 10): removes Concat/Split/Slice pairs that undo each other.
//   Concat(x)                                        -> x        (one input, axis valid for x's rank)
//   Split(x) with one output                         -> x        (no sizes, or a size equal to x's dim)
//   Split(Concat(a, b, ...), axis) -> a, b, ...      when both use the same axis (after normalizing with
//                                                    the static rank) and Split's sizes are exactly the
//                                                    static dims of a, b, ... along it
//   Slice(Concat(a, b, ...), [s], [e], [axis], [1])  -> the one input it selects exactly (constant starts,
//                                                    ends, one axis, step 1; static dims along the axis)
//   ReduceMax/ReduceMin(Concat(Unsqueeze(a, k), Unsqueeze(b, k), ..., axis k), axes [k], keepdims 0)
//                                                    -> Max/Min(a, b, ...)   (torch.stack(...).max(dim):
//                                                    the same values elementwise; NaN propagates in both,
//                                                    only the sign of a zero max/min may differ); with
//                                                    every piece a Transpose(y_i) of one perm,
//                                                    Transpose(Max/Min(y_i)) (contiguous operands)
// A Split or Slice output that is a graph output is left alone (its name must stay). Split sizes are
// read the way the CPU kernel reads them: the 'split' input, else the 'split' attribute, else
// 'num_outputs' (ceil-sized chunks), else equal parts.
// Order: after IdentityFunctionOptimizations (900), which clears Identity links between the pairs.
#include "opt/pattern_pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// Concat's axis attribute: required since opset 4 (nullopt when missing: the node fails at run
// time), optional with default 1 before.
std::optional<int64_t> concat_axis(const ir::Node& concat) {
  if (!concat.attr("axis") && concat.opset() >= 4) return std::nullopt;
  return concat.attr_int("axis", 1);
}

// The static size of every input of a Concat along its (normalized) axis, or nullopt.
struct ConcatPieces {
  int axis = 0;
  std::vector<int64_t> sizes;
};
std::optional<ConcatPieces> concat_pieces(const ir::Node& concat) {
  auto rank = static_rank(concat.output(0));
  auto axis_attr = concat_axis(concat);
  if (!rank || !axis_attr || concat.num_inputs() < 1) return std::nullopt;
  auto axis = normalize_axis(*axis_attr, *rank);
  if (!axis.is_ok()) return std::nullopt;
  ConcatPieces p{axis.value(), {}};
  for (const ir::Value* in : concat.inputs()) {
    if (!in || static_rank(in) != rank) return std::nullopt;
    auto d = fixed_dim(in, p.axis);
    if (!d) return std::nullopt;
    p.sizes.push_back(*d);
  }
  return p;
}

// Split's output sizes along its axis; `dim` is the input's static size there (nullopt: unknown).
std::optional<std::vector<int64_t>> split_sizes(const ir::Node& n, std::optional<int64_t> dim) {
  const auto nout = static_cast<size_t>(n.num_outputs());
  std::vector<int64_t> sizes;
  if (n.num_inputs() > 1 && n.input(1)) {
    auto v = constant_ints(n.input(1));
    if (!v) return std::nullopt;
    sizes = *v;
  } else if (n.attr("split")) {
    sizes = n.attr_ints("split");
  } else {
    if (!dim) return std::nullopt;
    const int64_t parts = n.attr_int("num_outputs", 0);
    if (parts > 0) {
      if (static_cast<size_t>(parts) != nout) return std::nullopt;
      const int64_t chunk = (*dim + parts - 1) / parts;
      for (size_t i = 0; i < nout; ++i)
        sizes.push_back(std::max<int64_t>(0, std::min(chunk, *dim - chunk * static_cast<int64_t>(i))));
    } else {
      if (nout == 0 || *dim % static_cast<int64_t>(nout) != 0) return std::nullopt;
      sizes.assign(nout, *dim / static_cast<int64_t>(nout));
    }
  }
  if (sizes.size() != nout) return std::nullopt;
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) return std::nullopt;
    total += s;
  }
  if (dim && total != *dim) return std::nullopt;  // the original fails at run time: keep it
  return sizes;
}

bool any_graph_output(const ir::Graph& g, const ir::Node& n) {
  for (const ir::Value* v : n.outputs())
    if (v && g.is_output(v)) return true;
  return false;
}

bool concat_of_one(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  if (n.num_inputs() != 1 || !n.input(0)) return false;
  auto rank = static_rank(n.input(0));
  auto axis = concat_axis(n);
  if (!rank || *rank < 1 || !axis || !normalize_axis(*axis, *rank).is_ok()) return false;
  return forward_output(g, &n, n.input(0)) && ctx.applied(n, "Concat(x) -> x");
}

bool split_into_one(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  if (n.num_outputs() != 1 || !n.output(0) || !n.input(0)) return false;
  auto rank = static_rank(n.input(0));
  if (!rank || *rank < 1) return false;
  auto axis = normalize_axis(n.attr_int("axis", 0), *rank);
  if (!axis.is_ok()) return false;
  // With explicit sizes the one size must equal the dim (else the original fails at run time).
  const bool has_sizes = (n.num_inputs() > 1 && n.input(1)) || n.attr("split");
  auto dim = fixed_dim(n.input(0), axis.value());
  if (has_sizes && (!dim || !split_sizes(n, dim))) return false;
  return forward_output(g, &n, n.input(0)) && ctx.applied(n, "Split(x) into one output -> x");
}

bool split_of_concat(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  ir::Node* concat = producer_of(n.input(0), "Concat");
  if (!concat || any_graph_output(g, n)) return false;
  auto pieces = concat_pieces(*concat);
  if (!pieces || pieces->sizes.size() != static_cast<size_t>(n.num_outputs())) return false;
  auto rank = static_rank(n.input(0));
  auto axis = normalize_axis(n.attr_int("axis", 0), rank ? *rank : 0);
  if (!rank || !axis.is_ok() || axis.value() != pieces->axis) return false;
  int64_t total = 0;
  for (int64_t s : pieces->sizes) total += s;
  auto sizes = split_sizes(n, total);
  if (!sizes || *sizes != pieces->sizes) return false;
  for (int i = 0; i < n.num_outputs(); ++i) {
    const ir::Value* out = n.output(i);
    if (out && out->type().elem != DType::kUndefined && concat->input(i)->type().elem != DType::kUndefined &&
        out->type().elem != concat->input(i)->type().elem)
      return false;
  }
  ctx.applied(n, "Split(Concat(a, b, ...)) -> a, b, ...");
  for (int i = 0; i < n.num_outputs(); ++i)
    if (n.output(i)) g.replace_all_uses(n.output(i), concat->input(i));
  g.remove_node(&n);
  if (concat->output(0)->users().empty() && !g.is_output(concat->output(0))) g.remove_node(concat);
  return true;
}

// Slice's (start, end) along its single axis, or nullopt for anything else (several axes, step != 1,
// non-constant parameters).
struct SliceRange {
  int64_t axis, start, end;
};
std::optional<SliceRange> single_axis_slice(const ir::Node& n) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    auto s = constant_ints(n.input(1));
    auto e = constant_ints(n.input(2));
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (n.num_inputs() > 3 && n.input(3)) {
      auto a = constant_ints(n.input(3));
      if (!a) return std::nullopt;
      axes = *a;
    }
    if (n.num_inputs() > 4 && n.input(4)) {
      auto st = constant_ints(n.input(4));
      if (!st) return std::nullopt;
      steps = *st;
    }
  }
  if (starts.size() != 1 || ends.size() != 1) return std::nullopt;
  if (!steps.empty() && (steps.size() != 1 || steps[0] != 1)) return std::nullopt;
  if (axes.size() > 1) return std::nullopt;
  return SliceRange{axes.empty() ? 0 : axes[0], starts[0], ends[0]};
}

bool slice_of_concat(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  ir::Node* concat = producer_of(n.input(0), "Concat");
  if (!concat) return false;
  auto range = single_axis_slice(n);
  auto pieces = concat_pieces(*concat);
  auto rank = static_rank(n.input(0));
  if (!range || !pieces || !rank) return false;
  auto axis = normalize_axis(range->axis, *rank);
  if (!axis.is_ok() || axis.value() != pieces->axis) return false;
  int64_t total = 0;
  for (int64_t s : pieces->sizes) total += s;
  // ONNX Slice clamping for a positive step.
  auto clamp = [total](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + total : v, 0, total); };
  const int64_t start = clamp(range->start), end = clamp(range->end);
  int64_t offset = 0;
  for (size_t i = 0; i < pieces->sizes.size(); ++i) {
    const int64_t size = pieces->sizes[i];
    if (size > 0 && offset == start && offset + size == end)
      return forward_output(g, &n, concat->input(static_cast<int>(i))) &&
             ctx.applied(n, "Slice(Concat(a, b, ...)) selecting input " + std::to_string(i) + " -> that input");
    offset += size;
  }
  return false;
}

// The reduce's single axis (the 'axes' input from opset 18, the attribute before), normalized, or nullopt.
std::optional<int> reduce_axis(const ir::Node& n, int rank) {
  std::optional<std::vector<int64_t>> axes;
  if (n.opset() >= 18) {
    axes = n.num_inputs() > 1 && n.input(1) ? constant_ints(n.input(1)) : std::nullopt;
  } else if (n.attr("axes")) {
    axes = n.attr_ints("axes");
  }
  if (!axes || axes->size() != 1) return std::nullopt;
  auto a = normalize_axis((*axes)[0], rank);
  return a.is_ok() ? std::optional<int>(a.value()) : std::nullopt;
}

bool reduce_of_stack(ir::Graph& g, ir::Node& n, PassContext& ctx) {
  if (n.attr_int("keepdims", 1) != 0 || n.num_outputs() != 1) return false;
  ir::Node* concat = producer_of(n.input(0), "Concat");
  auto rank = static_rank(n.input(0));
  if (!concat || !rank || concat->num_inputs() < 2 || !has_single_use(g, concat->output(0))) return false;
  auto axis = reduce_axis(n, *rank);
  auto cat_axis = concat_axis(*concat);
  if (!axis || !cat_axis) return false;
  auto cat = normalize_axis(*cat_axis, *rank);
  if (!cat.is_ok() || cat.value() != *axis) return false;
  // Every piece an Unsqueeze of one tensor at that axis (a size-1 slice of the stack), read only here.
  std::vector<ir::Value*> xs;
  std::vector<ir::Node*> nodes = {concat};
  for (ir::Value* in : concat->inputs()) {
    ir::Node* u = producer_of(in, "Unsqueeze");
    if (!u || !has_single_use(g, in) || !u->input(0) || static_rank(u->input(0)) != *rank - 1) return false;
    auto ax = u->opset() >= 13 ? (u->num_inputs() > 1 && u->input(1) ? constant_ints(u->input(1)) : std::nullopt)
                               : std::optional<std::vector<int64_t>>(u->attr_ints("axes"));
    if (!ax || ax->size() != 1) return false;
    auto a = normalize_axis((*ax)[0], *rank);
    if (!a.is_ok() || a.value() != *axis || elem_type(u->input(0)) != elem_type(n.output(0))) return false;
    xs.push_back(u->input(0));
    nodes.push_back(u);
  }
  const std::string op = n.op_type() == "ReduceMax" ? "Max" : "Min";
  // x_i = Transpose(y_i, perm) alike (torch's permute before the stack): Transpose(Max(y_i), perm), so the
  // elementwise op reads contiguous tensors and one Transpose remains.
  std::vector<ir::Value*> ys;
  const ir::Node* first_t = producer_of(xs[0], "Transpose");
  for (ir::Value* x : xs) {
    ir::Node* t = producer_of(x, "Transpose");
    if (!t || !first_t || !has_single_use(g, x) || !t->input(0) || t->attr_ints("perm") != first_t->attr_ints("perm") ||
        first_t->attr_ints("perm").empty()) {
      ys.clear();
      break;
    }
    ys.push_back(t->input(0));
  }
  nodes.push_back(&n);
  if (!ys.empty()) {
    const std::vector<int64_t> perm = first_t->attr_ints("perm");
    for (ir::Value* x : xs) nodes.push_back(x->producer());
    const std::string name = g.unique_name(n.name().empty() ? op : n.name() + "/" + op);
    ir::Node* m = g.add_node(op, "", name, ys, {g.unique_name(name + "_out")});
    m->set_opset(13);
    fuse(g, nodes, &n, "Transpose", "", 13, {m->output(0)}, {attr_ints("perm", perm)});
    return ctx.applied(n, n.op_type() + "(Concat(Unsqueeze(Transpose(y_i)))) over the stacked axis) -> Transpose(" +
                              op + "(y_1.." + std::to_string(ys.size()) + "))");
  }
  fuse(g, nodes, &n, op, "", 13, xs, {});
  return ctx.applied(n, n.op_type() + "(Concat(Unsqueeze(x_i)) over the stacked axis) -> " + op + "(x_1.." +
                            std::to_string(xs.size()) + ")");
}

class ConcatSplitOptimizations final : public PatternPass {
 public:
  ConcatSplitOptimizations() {
    add_rule({"Concat(x) -> x", {"Concat"}, concat_of_one});
    add_rule({"Split(x) into one output -> x", {"Split"}, split_into_one});
    add_rule({"Split(Concat(a, b, ...)) -> a, b, ...", {"Split"}, split_of_concat});
    add_rule({"Slice(Concat(a, b, ...)) -> a piece", {"Slice"}, slice_of_concat});
    add_rule({"ReduceMax/Min(stack of x_i) -> Max/Min(x_i)", {"ReduceMax", "ReduceMin"}, reduce_of_stack});
  }
  const char* name() const override { return "ConcatSplitOptimizations"; }
  PassCategory category() const override { return PassCategory::kAlgebraic; }
};

const PassRegistrar kRegistrar("simplify_concat_split", [] { return std::make_unique<ConcatSplitOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
