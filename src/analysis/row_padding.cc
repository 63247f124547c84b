#include "analysis/row_padding.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "ir/dim_product.h"
#include "ir/op_schema.h"
#include "ir/symbolic_scalar.h"

namespace sdx::analysis {
namespace {

using ir::Dim;
using ir::Node;
using ir::Value;

// What a value is to the symbol B being proven.
struct Row {
  int axis = -1;       // the axis carrying B (-1: none)
  bool sized = false;  // its values depend on B's size (computed from a Shape of a value carrying B)
  // What B is multiplied by at its axis: 1, or the heads an exporter folds into the batch ([B, 6, 400, 64] ->
  // [6*B, 400, 64]). B is the outer factor there (regroups checks it), so B's rows stay whole and in order.
  ir::DimProduct inner;
  bool involved() const { return axis >= 0 || sized; }
  bool merged() const { return axis >= 0 && inner != ir::DimProduct{}; }
};

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// Whether a dim's spelling names B anywhere ("B", "6*B", "floor(B/2)", "past + B"), as a whole name.
bool mentions(const std::string& param, const std::string& b) {
  if (b.empty()) return false;
  for (size_t at = param.find(b); at != std::string::npos; at = param.find(b, at + 1)) {
    const bool starts = at == 0 || !name_char(param[at - 1]);
    const bool ends = at + b.size() == param.size() || !name_char(param[at + b.size()]);
    if (starts && ends) return true;
  }
  return false;
}

// Whether a dim's spelling names B inside a sum ("past + B", "B + 1").
bool in_sum(const std::string& param, const std::string& b) {
  if (param == b) return false;
  size_t at = 0;
  while ((at = param.find(b, at)) != std::string::npos) {
    const bool starts = at == 0 || (at >= 3 && param.compare(at - 3, 3, " + ") == 0);
    const bool ends = at + b.size() == param.size() || param.compare(at + b.size(), 3, " + ") == 0;
    if (starts && ends) return true;
    at += b.size();
  }
  return false;
}

// The rule's view of one node: its inputs' and outputs' rows, and what a rule checks with them.
struct View {
  const Node& n;
  const std::string& b;
  std::vector<Row> in, out;

  int rank(int i) const {
    const Value* v = n.input(i);
    return v && v->type().shape ? static_cast<int>(v->type().shape->size()) : -1;
  }
  int out_rank(int o) const {
    const Value* v = n.output(o);
    return v && v->type().shape ? static_cast<int>(v->type().shape->size()) : -1;
  }
  bool has(int i) const { return i < n.num_inputs() && n.input(i) && in[static_cast<size_t>(i)].involved(); }
  int axis(int i) const { return i < n.num_inputs() && n.input(i) ? in[static_cast<size_t>(i)].axis : -1; }
  bool sized(int i) const { return i < n.num_inputs() && n.input(i) && in[static_cast<size_t>(i)].sized; }
  std::string where() const { return "node '" + n.name() + "' (" + n.op_type() + ")"; }
  std::string mixes(int i, int a) const {
    return where() + " mixes positions along it (input " + std::to_string(i) + " axis " + std::to_string(a) + ")";
  }
  // Input i must not depend on B.
  std::string none(int i) const {
    return has(i) ? where() + " reads it in input " + std::to_string(i) + ", which the op does not take by rows" : "";
  }
  // Inputs from `first` on must not depend on B.
  std::string none_from(int first) const {
    for (int i = first; i < n.num_inputs(); ++i)
      if (std::string why = none(i); !why.empty()) return why;
    return "";
  }
  // Input i may hold sizes (a shape operand), never rows.
  std::string shape_operand(int i) const {
    return axis(i) >= 0 ? where() + " takes input " + std::to_string(i) + " as a shape, not by rows" : "";
  }
  // The constant (or shape-computed) integers of input i.
  std::optional<std::vector<Dim>> ints(int i) const {
    return i < n.num_inputs() && n.input(i) ? ir::symbolic_vector(n.input(i)) : std::nullopt;
  }
  // The "axes" attribute, or input i's constant values when it is given (nullopt: not constant).
  std::optional<std::vector<int64_t>> axes(int i) const {
    if (!(i < n.num_inputs() && n.input(i))) return n.attr_ints("axes");
    auto c = ints(i);
    if (!c) return std::nullopt;
    std::vector<int64_t> out;
    for (const Dim& d : *c) {
      if (!ir::is_int(d)) return std::nullopt;
      out.push_back(d.value);
    }
    return out;
  }
  // Axis attribute normalized against rank r (nullopt when out of range).
  std::optional<int> attr_axis(const char* name, int64_t def, int r) const {
    int64_t a = n.attr_int(name, def);
    if (a < 0) a += r;
    if (a < 0 || a >= r) return std::nullopt;
    return static_cast<int>(a);
  }
};

using Rule = std::string (*)(const View&);

// --- rules ------------------------------------------------------------------------------------------------

// Numpy broadcasting: every input carrying B carries it at the output's axis, right-aligned; no sizes as data.
std::string broadcast(const View& v) {
  const int r = v.out_rank(0);
  if (v.out[0].axis < 0) return "";  // an output without it: said by the walk (declared without it, or lost)
  for (int i = 0; i < v.n.num_inputs(); ++i) {
    if (v.sized(i)) return v.where() + " reads a size of it as data (input " + std::to_string(i) + ")";
    if (v.axis(i) >= 0 && v.axis(i) + (r - v.rank(i)) != v.out[0].axis)
      return v.where() + " broadcasts input " + std::to_string(i) + " across it";
  }
  return "";
}

// Division of integers: padded rows are zeros, which an integer division by them would trap on.
std::string divide(const View& v) {
  const Value* y = v.n.input(1);
  if (y && v.has(1) && !dtype_is_float(y->type().elem)) return v.where() + " divides integers by padded rows";
  return broadcast(v);
}

// Unary on input 0, the other inputs parameters (Clip's bounds, a Dropout's ratio, quantization scales).
std::string unary(const View& v) {
  if (std::string why = v.none_from(1); !why.empty()) return why;
  return broadcast(v);
}

// Mixes along one axis attribute (Softmax from opset 13, ArgMax, TopK, CumSum-like ops with an attribute).
std::string along_axis(const View& v, int64_t def, bool and_later) {
  if (std::string why = v.none_from(1); !why.empty()) return why;
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  const int a = v.axis(0);
  if (a < 0) return "";
  auto m = v.attr_axis("axis", def, v.rank(0));
  if (!m) return v.where() + ": its axis attribute is out of range";
  if (a == *m || (and_later && a > *m)) return v.mixes(0, a);
  return "";
}
std::string softmax(const View& v) {
  return v.n.opset() >= 13 ? along_axis(v, -1, false) : along_axis(v, 1, true);  // opset < 13: 2-D coerced
}
std::string single_axis(const View& v) { return along_axis(v, 0, false); }
std::string top_k(const View& v) { return along_axis(v, -1, false); }
std::string layer_norm(const View& v) { return along_axis(v, -1, true); }  // normalizes axis.. last
std::string lp_norm(const View& v) { return along_axis(v, -1, false); }

// Reduce*: axes from the attribute or input 1; all axes when none (unless noop_with_empty_axes).
std::string reduce(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (std::string why = v.none_from(1); !why.empty()) return why;
  const int a = v.axis(0), r = v.rank(0);
  if (a < 0) return "";
  auto given = v.axes(1);
  if (!given) return v.where() + ": its axes are not constant";
  const std::vector<int64_t>& axes = *given;
  if (axes.empty()) return v.n.attr_int("noop_with_empty_axes", 0) ? "" : v.mixes(0, a);
  for (int64_t x : axes)
    if ((x < 0 ? x + r : x) == a) return v.mixes(0, a);
  return "";
}

// MatMul / MatMulInteger: A's last axis and B's second-last are contracted (a 1-D operand's only axis too).
std::string matmul(const View& v) {
  if (v.sized(0) || v.sized(1)) return v.where() + " reads a size of it as data";
  if (std::string why = v.none_from(2); !why.empty()) return why;
  const int ra = v.rank(0), rb = v.rank(1);
  if (v.axis(0) >= 0 && (ra == 1 || v.axis(0) == ra - 1)) return v.mixes(0, v.axis(0));
  if (v.axis(1) >= 0 && (rb == 1 || v.axis(1) == rb - 2)) return v.mixes(1, v.axis(1));
  if (v.axis(1) >= 0 && v.axis(1) == rb - 1 && v.axis(0) >= 0) return v.mixes(1, v.axis(1));
  if (v.axis(0) >= 0 && v.axis(1) >= 0 && v.axis(0) - ra != v.axis(1) - rb)
    return v.where() + " broadcasts one operand across it";
  return "";
}

// Gemm: A [M, K] (transA: [K, M]), B [K, N] (transB: [N, K]), C broadcast to [M, N].
std::string gemm(const View& v) {
  for (int i = 0; i < 3; ++i)
    if (v.sized(i)) return v.where() + " reads a size of it as data";
  const int ka = v.n.attr_int("transA", 0) ? 0 : 1, kb = v.n.attr_int("transB", 0) ? 1 : 0;
  if (v.axis(0) == ka) return v.mixes(0, ka);
  if (v.axis(1) == kb) return v.mixes(1, kb);
  if (v.axis(1) >= 0 && v.axis(0) >= 0) return v.mixes(1, v.axis(1));
  if (v.axis(2) >= 0 && v.axis(2) + (2 - v.rank(2)) != v.out[0].axis) return v.where() + " broadcasts C across it";
  return "";
}

// Batch-first ops on images and sequences (Conv, pooling, normalizations per sample): B only as axis 0 of the
// data input; weights and the rest take no part.
std::string batch_first(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (v.axis(0) > 0) return v.mixes(0, v.axis(0));
  if (std::string why = v.none_from(1); !why.empty()) return why;
  for (int o = 1; o < v.n.num_outputs(); ++o)  // MaxPool's indices count across the batch
    if (v.n.output(o) && !v.n.output(o)->users().empty() && v.n.op_type() == "MaxPool")
      return v.where() + "'s indices number positions across it";
  if (v.n.op_type() == "BatchNormalization" && v.n.attr_int("training_mode", 0) != 0)
    return v.where() + " computes statistics across it (training mode)";
  return "";
}

// ConvInteger: x and its zero point.
std::string conv_integer(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (v.axis(0) > 0) return v.mixes(0, v.axis(0));
  return v.none_from(1);
}

// Ops that move axes around as their inferred shapes say (Transpose, Squeeze, Unsqueeze, Identity-like):
// input 0 by rows, the rest shape operands.
std::string moves(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  for (int i = 1; i < v.n.num_inputs(); ++i)
    if (std::string why = v.shape_operand(i); !why.empty()) return why;
  return "";
}

// Reshape / Flatten: B keeps its rows when what comes before it and what comes after it hold the same
// elements in the input and the output (their dims' products agree, with what B is multiplied by at its axis
// counted after it: [B, 6, 400, 64] -> [6*B, 400, 64] and back keep B's rows whole and in order).
std::string regroups(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  for (int i = 1; i < v.n.num_inputs(); ++i)
    if (std::string why = v.shape_operand(i); !why.empty()) return why;
  const int a = v.axis(0), o = v.out[0].axis;
  if (a < 0) return "";
  const std::string shapes =
      " (" + v.n.input(0)->type().shape_string() + " -> " + v.n.output(0)->type().shape_string() + ")";
  if (o < 0) return v.where() + " regroups it with other dims" + shapes;
  const auto& x = *v.n.input(0)->type().shape;
  const auto& y = *v.n.output(0)->type().shape;
  auto bx = ir::product_of(x.data(), x.data() + a), ax = ir::product_of(x.data() + a + 1, x.data() + x.size());
  auto by = ir::product_of(y.data(), y.data() + o), ay = ir::product_of(y.data() + o + 1, y.data() + y.size());
  if (!bx || !ax || !by || !ay) return v.where() + ": the dims around it are not all known" + shapes;
  auto rx = ir::multiply(v.in[0].inner, *ax), ry = ir::multiply(v.out[0].inner, *ay);
  if (*bx != *by || !rx || !ry || *rx != *ry) return v.where() + " regroups it with other dims" + shapes;
  return "";
}

// Expand: input 0 broadcast to the shape of input 1 (which may hold sizes).
std::string expand(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (std::string why = v.shape_operand(1); !why.empty()) return why;
  if (v.axis(0) >= 0 && v.axis(0) + (v.out_rank(0) - v.rank(0)) != v.out[0].axis)
    return v.where() + " broadcasts input 0 across it";
  return "";
}

std::string constant_of_shape(const View& v) { return v.shape_operand(0); }

// Tile: the repeats along B must be 1.
std::string tile(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (std::string why = v.shape_operand(1); !why.empty()) return why;
  const int a = v.axis(0);
  if (a < 0) return "";
  auto reps = v.ints(1);
  if (!reps || static_cast<int>(reps->size()) <= a || !ir::is_int((*reps)[static_cast<size_t>(a)]) ||
      (*reps)[static_cast<size_t>(a)].value != 1)
    return v.mixes(0, a);
  return "";
}

// Concat: every input by rows, along another axis.
std::string concat(const View& v) {
  const int r = v.out_rank(0);
  auto c = v.attr_axis("axis", 0, r);
  if (!c) return v.where() + ": its axis attribute is out of range";
  for (int i = 0; i < v.n.num_inputs(); ++i) {
    if (v.sized(i)) return v.where() + " joins a size of it with rows";
    if (!v.n.input(i)) continue;
    if (v.axis(i) < 0 && v.rank(i) == r) return v.where() + " joins input " + std::to_string(i) + ", which has no rows";
    if (v.axis(i) == *c) return v.mixes(i, *c);
    if (v.axis(i) != v.out[0].axis) return v.where() + " joins rows at another axis";
  }
  return "";
}

// Split: along another axis; its sizes a shape operand.
std::string split(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (std::string why = v.shape_operand(1); !why.empty()) return why;
  const int a = v.axis(0);
  auto s = v.attr_axis("axis", 0, v.rank(0));
  if (!s) return v.where() + ": its axis attribute is out of range";
  return a == *s ? v.mixes(0, a) : "";
}

// Whether entry j of a Slice's bounds keeps its whole axis: start 0, step 1, an end past any size (exporters
// write INT_MAX or 10^9: at least 10^9 counts) or the dim itself.
bool whole(const View& v, size_t j) {
  auto at = [&](int input, const char* attr, int64_t def) -> std::optional<Dim> {
    std::optional<std::vector<Dim>> xs;
    if (v.n.num_inputs() > 1) {
      if (!(input < v.n.num_inputs() && v.n.input(input))) return Dim{def, {}};
      xs = v.ints(input);
    } else {
      if (!v.n.attr(attr)) return Dim{def, {}};
      xs.emplace();
      for (int64_t x : v.n.attr_ints(attr)) xs->push_back(Dim{x, {}});
    }
    if (!xs || j >= xs->size()) return std::nullopt;
    return (*xs)[j];
  };
  auto start = at(1, "starts", 0), end = at(2, "ends", 0), step = at(4, "steps", 1);
  if (!start || !end || !step || !ir::is_int(*start) || start->value != 0 || !ir::is_int(*step) || step->value != 1)
    return false;
  return (ir::is_int(*end) && end->value >= 1000000000) || end->param == v.b;
}

// Slice: B's axis must not be cut (axes constant; starts, ends and steps shape operands); kept whole, it may be
// among the axes.
std::string slice(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  for (int i = 1; i < v.n.num_inputs(); ++i) {
    if (std::string why = v.shape_operand(i); !why.empty()) return why;
    if (v.sized(i)) return v.where() + " slices by a size of it";
  }
  const int a = v.axis(0), r = v.rank(0);
  if (a < 0) return "";
  auto given = v.axes(3);
  if (!given) return v.where() + ": its axes are not constant";
  std::vector<int64_t> axes = *given;
  const bool axes_given = v.n.num_inputs() > 3 && v.n.input(3);
  if (!axes_given && v.n.num_inputs() > 1 && axes.empty()) {  // opset 10 on, no axes: 0 .. len(starts) - 1
    auto starts = v.ints(1);
    if (!starts) return v.where() + ": its starts are not known";
    for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  } else if (v.n.num_inputs() == 1 && axes.empty()) {  // before opset 10: the starts attribute's axes
    for (size_t i = 0; i < v.n.attr_ints("starts").size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (size_t j = 0; j < axes.size(); ++j)
    if ((axes[j] < 0 ? axes[j] + r : axes[j]) == a && !whole(v, j)) return v.mixes(0, a);
  return "";
}

// Gather: rows of the data along another axis, or indices carrying B (an embedding lookup); not both.
std::string gather(const View& v) {
  if (v.sized(0) || v.sized(1)) return v.where() + " indexes by a size of it";
  auto g = v.attr_axis("axis", 0, v.rank(0));
  if (!g) return v.where() + ": its axis attribute is out of range";
  if (v.axis(0) == *g) return v.mixes(0, *g);
  if (v.axis(0) >= 0 && v.axis(1) >= 0) return v.where() + " indexes rows with rows";
  return "";
}

// GatherElements: data and indices carry B at the same axis, not the gathered one.
std::string gather_elements(const View& v) {
  if (v.sized(0) || v.sized(1)) return v.where() + " reads a size of it as data";
  auto g = v.attr_axis("axis", 0, v.rank(0));
  if (!g) return v.where() + ": its axis attribute is out of range";
  if (v.axis(0) == *g || v.axis(1) == *g) return v.mixes(v.axis(0) == *g ? 0 : 1, *g);
  if (v.axis(0) != v.axis(1)) return v.where() + " indexes rows with rows";
  return "";
}

// Pad: nothing added along B (pads constant or known), the constant value a parameter.
std::string pad(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (std::string why = v.none_from(2); !why.empty()) return why;
  if (std::string why = v.shape_operand(1); !why.empty()) return why;
  const int a = v.axis(0), r = v.rank(0);
  if (a < 0) return "";
  if (v.n.num_inputs() > 3 && v.n.input(3)) return v.where() + ": pads with an axes input are not followed";
  std::vector<Dim> pads;
  if (v.n.num_inputs() > 1 && v.n.input(1)) {
    auto c = v.ints(1);
    if (!c) return v.where() + ": its pads are not known";
    pads = *c;
  } else {
    for (int64_t p : v.n.attr_ints("pads")) pads.push_back(Dim::fixed(p));
  }
  if (static_cast<int>(pads.size()) != 2 * r) return v.where() + ": its pads are not known";
  for (size_t at : {static_cast<size_t>(a), static_cast<size_t>(a + r)})
    if (!ir::is_int(pads[at]) || pads[at].value != 0) return v.mixes(0, a);
  return "";
}

// Resize / Upsample: B only as the batch axis, kept at its size (scale 1, or sizes naming it).
std::string resize(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (v.axis(0) > 0) return v.mixes(0, v.axis(0));
  for (int i = 1; i < v.n.num_inputs(); ++i)
    if (std::string why = v.shape_operand(i); !why.empty()) return why;
  if (v.axis(0) == 0 && v.out[0].axis != 0) return v.mixes(0, 0);
  return "";
}

// Shape / Size: sizes when they read B's dim (handled by the walk); nothing else.
std::string shape_of(const View&) { return ""; }

// CumSum: its axis (input 1) must be constant and another.
std::string cumsum(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  if (std::string why = v.none(1); !why.empty()) return why;
  const int a = v.axis(0);
  if (a < 0) return "";
  auto c = v.ints(1);
  if (!c || c->size() != 1 || !ir::is_int((*c)[0])) return v.where() + ": its axis is not constant";
  const int64_t x = (*c)[0].value < 0 ? (*c)[0].value + v.rank(0) : (*c)[0].value;
  return x == a ? v.mixes(0, a) : "";
}

// Trilu: the last two axes are one matrix.
std::string trilu(const View& v) {
  if (std::string why = v.none_from(1); !why.empty()) return why;
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  return v.axis(0) >= v.rank(0) - 2 ? v.mixes(0, v.axis(0)) : "";
}

// OneHot: indices by rows; depth and values parameters.
std::string one_hot(const View& v) {
  if (v.sized(0)) return v.where() + " reads a size of it as data";
  return v.none_from(1);
}

// LSTM / GRU / RNN: X [seq, batch, in] (layout 1: [batch, seq, in]); sequence_lens [batch]; initial_h / c
// [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]); weights take no part.
std::string recurrent(const View& v) {
  const bool batch_major = v.n.attr_int("layout", 0) != 0;
  const std::string& op = v.n.op_type();
  for (int i = 0; i < v.n.num_inputs(); ++i) {
    if (!v.n.input(i)) continue;
    if (v.sized(i)) return v.where() + " reads a size of it as data";
    int want = -2;  // the axis B may have in input i (-2: none)
    if (i == 0) want = batch_major ? 0 : 1;
    if (i == 4) want = 0;                                          // sequence_lens
    if (i == 5 || (i == 6 && op == "LSTM")) want = batch_major ? 0 : 1;  // initial_h, initial_c
    if (v.axis(i) >= 0 && v.axis(i) != want) return v.mixes(i, v.axis(i));
  }
  return "";
}

// The rules: op (default domain) -> rule. An op without one is not followed (not proven).
const std::unordered_map<std::string, Rule>& rules() {
  static const std::unordered_map<std::string, Rule> table = [] {
    std::unordered_map<std::string, Rule> t;
    for (const char* op : {"Add", "Sub", "Mul", "Pow", "Max", "Min", "Sum", "Mean", "Where", "Equal", "Less",
                           "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "BitShift", "BitwiseAnd",
                           "BitwiseOr", "BitwiseXor", "PRelu", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Abs", "Neg",
                           "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos",
                           "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Sign", "Not", "BitwiseNot", "IsNaN",
                           "IsInf", "Cast", "CastLike", "Identity", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid",
                           "HardSwish", "Softplus", "Softsign", "Gelu", "Mish", "ThresholdedRelu", "Swish"})
      t[op] = broadcast;
    t["Div"] = t["Mod"] = divide;
    for (const char* op : {"Clip", "Dropout", "QuantizeLinear", "DequantizeLinear"}) t[op] = unary;
    t["Softmax"] = t["LogSoftmax"] = t["Hardmax"] = softmax;
    t["ArgMax"] = t["ArgMin"] = single_axis;
    t["TopK"] = top_k;
    t["LayerNormalization"] = layer_norm;
    t["LpNormalization"] = lp_norm;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
      t[op] = reduce;
    t["MatMul"] = t["MatMulInteger"] = matmul;
    t["Gemm"] = gemm;
    for (const char* op : {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool",
                           "GlobalMaxPool", "GlobalLpPool", "BatchNormalization", "InstanceNormalization", "LRN",
                           "DepthToSpace", "SpaceToDepth", "GroupNormalization"})
      t[op] = batch_first;
    t["ConvInteger"] = conv_integer;
    for (const char* op : {"Transpose", "Squeeze", "Unsqueeze"}) t[op] = moves;
    t["Reshape"] = t["Flatten"] = regroups;
    t["Expand"] = expand;
    t["ConstantOfShape"] = constant_of_shape;
    t["Tile"] = tile;
    t["Concat"] = concat;
    t["Split"] = split;
    t["Slice"] = slice;
    t["Gather"] = gather;
    t["GatherElements"] = gather_elements;
    t["Pad"] = pad;
    t["Resize"] = t["Upsample"] = resize;
    t["Shape"] = t["Size"] = shape_of;
    t["CumSum"] = cumsum;
    t["Trilu"] = trilu;
    t["OneHot"] = one_hot;
    t["LSTM"] = t["GRU"] = t["RNN"] = recurrent;
    return t;
  }();
  return table;
}

// Values of outer graphs that a node's subgraphs read (by name), recursively.
void outer_reads(const ir::Graph& g, std::vector<const Value*>& out) {
  for (const auto& node : g.nodes()) {
    if (node->removed()) continue;
    for (const Value* v : node->inputs())
      if (v && v->owner() != &g) out.push_back(v);
    for (const ir::Graph* s : node->subgraphs()) outer_reads(*s, out);
  }
}

class Prover {
 public:
  Prover(const ir::Graph& g, std::string b) : g_(g), b_(std::move(b)) {}

  const OutputAxes& output_axes() const { return output_axes_; }

  std::string run() {
    for (const Value* v : g_.inputs()) {
      if (v->is_initializer() || v->type().kind != ir::TypeInfo::Kind::kTensor) continue;  // no declared dims
      Row r;
      if (std::string why = carried(v, r); !why.empty()) return why;
      if (r.merged()) return "input '" + v->name() + "' has it inside a product";
      rows_[v] = r;
    }
    for (const auto& node : g_.nodes())
      if (!node->removed())
        if (std::string why = step(*node); !why.empty()) return why;
    for (const Value* v : g_.outputs()) {
      const Row r = row(v);
      if (r.sized) return "output '" + v->name() + "' holds a size of it";
    }
    return "";
  }

 private:
  Row row(const Value* v) const {
    auto it = v ? rows_.find(v) : rows_.end();
    return it == rows_.end() ? Row{} : it->second;
  }

  // The axis of v's inferred shape named B (r.axis), or why v cannot be followed.
  std::string carried(const Value* v, Row& r) const {
    r.axis = -1;
    if (v->type().kind != ir::TypeInfo::Kind::kTensor)
      return "value '" + v->name() + "' is not a tensor";
    if (!v->type().shape) return "the shape of value '" + v->name() + "' is not known";
    const auto& dims = *v->type().shape;
    for (size_t a = 0; a < dims.size(); ++a) {
      if (!mentions(dims[a].param, b_)) continue;
      if (in_sum(dims[a].param, b_)) return "value '" + v->name() + "' has it inside a sum ('" + dims[a].param + "')";
      // B, or a product naming B once ("6*B": B's rows, each 6 rows long). Another expression of B
      // ("floor(B/2) + 1") does not carry it: the rule or the walk says why.
      std::optional<ir::DimProduct> inner = ir::DimProduct{};
      if (dims[a].param != b_) {
        auto p = ir::parse_product(dims[a]);
        inner = p ? ir::divide(*p, ir::DimProduct{1, {b_}}) : std::nullopt;
        if (!inner || inner->symbols.count(b_)) continue;
      }
      if (r.axis >= 0) return "value '" + v->name() + "' has it at two axes";
      r.axis = static_cast<int>(a);
      r.inner = *inner;
    }
    return "";
  }

  std::string step(const Node& n) {
    View v{n, b_, {}, {}};
    bool any = false, rows_in = false;
    for (const Value* x : n.inputs()) {
      v.in.push_back(row(x));
      any = any || v.in.back().involved();
      rows_in = rows_in || v.in.back().axis >= 0;
    }
    if (!n.subgraphs().empty()) {
      std::vector<const Value*> outer;
      for (const ir::Graph* s : n.subgraphs()) outer_reads(*s, outer);
      for (const Value* x : outer)
        if (row(x).involved()) return v.where() + " reads value '" + x->name() + "' in a subgraph (not followed)";
    }
    if (!any) return "";
    const std::string& op = n.op_type();
    // Arithmetic on sizes alone (Gather(Shape(x), 0), Concat of sizes, ...): sizes still, unless its value
    // follows from shapes without B (Gather(Shape(x), 1) is S). Whatever op it is: sizes are checked where
    // they are read.
    bool rows_out = false;
    for (const Value* o : n.outputs()) {
      Row r;
      if (o && carried(o, r).empty()) rows_out = rows_out || r.axis >= 0;
    }
    if (!rows_in && !rows_out) {
      for (const Value* o : n.outputs())
        if (o) mark_sized(o);
      return "";
    }
    const bool domain_default = ir::normalize_domain(n.domain()).empty();
    auto rule = domain_default ? rules().find(n.op_type()) : rules().end();
    if (rule == rules().end()) {
      return v.where() + " has no row rule" +
             (domain_default ? "" : std::string(" (domain '") + n.domain() + "')");
    }
    // Outputs: where their inferred shapes put B.
    for (const Value* o : n.outputs()) {
      Row r;
      if (o)
        if (std::string why = carried(o, r); !why.empty()) return why;
      v.out.push_back(r);
    }
    if (v.out.empty()) return v.where() + " has no outputs";
    if (rule->second != regroups)  // only a Reshape changes what B is multiplied by; elsewhere rows must agree
      if (std::string why = same_grouping(v); !why.empty()) return why;
    if (std::string why = rule->second(v); !why.empty()) return why;
    for (size_t o = 0; o < v.out.size(); ++o) {  // the shape a graph output declares is what is sliced back
      const Value* out = n.output(static_cast<int>(o));
      if (out && v.out[o].axis < 0 && g_.is_output(out) && op != "Shape" && op != "Size")
        return "output '" + out->name() + "' is declared " + out->type().shape_string() + ", without it";
    }
    if (op == "Shape" || op == "Size") {
      // Sizes when they read B's dim (Shape's [start, end) may leave it out).
      const int a = v.in[0].axis, r = v.rank(0);
      int64_t s = n.attr_int("start", 0), e = n.attr_int("end", r);
      s = s < 0 ? s + r : s;
      e = e < 0 ? e + r : std::min<int64_t>(e, r);
      if (a >= 0 && (op == "Size" || (a >= s && a < e))) mark_sized(n.output(0));
      return "";
    }
    for (size_t o = 0; o < v.out.size(); ++o) {
      const Value* out = n.output(static_cast<int>(o));
      if (!out) continue;
      if (v.out[o].axis < 0 && (!out->users().empty() || g_.is_output(out)))
        return v.where() + " output '" + out->name() + "' depends on it but does not carry it";
      if (v.out[o].merged() && g_.is_output(out))
        return "output '" + out->name() + "' has it inside a product (" + out->type().shape_string() + ")";
      rows_[out] = v.out[o];
      if (v.out[o].axis >= 0 && g_.is_output(out)) output_axes_.emplace_back(out->name(), v.out[o].axis);
    }
    return "";
  }

  // The inputs and outputs carrying B multiply it by the same (a [6*B, ...] row is not a [B, ...] one).
  static std::string same_grouping(const View& v) {
    auto spelled = [&](const Row& r) {
      auto p = ir::multiply(r.inner, ir::DimProduct{1, {v.b}});
      return p ? ir::spell(*p).param : std::string("?");
    };
    const Row* first = nullptr;
    for (const std::vector<Row>* rows : {&v.in, &v.out})
      for (const Row& r : *rows) {
        if (r.axis < 0) continue;
        if (first && first->inner != r.inner)
          return v.where() + " meets it grouped differently (" + spelled(*first) + " and " + spelled(r) + ")";
        if (!first) first = &r;
      }
    return "";
  }

  // v holds sizes unless its value follows from shapes without B (Gather(Shape(x), 1) is S).
  void mark_sized(const Value* v) {
    Row r;
    r.sized = true;
    if (auto d = ir::symbolic_vector(v)) {
      bool names_b = false, unknown = false;
      for (const Dim& x : *d) {
        unknown = unknown || (!ir::is_int(x) && x.param.empty());
        names_b = names_b || mentions(x.param, b_);
      }
      if (!names_b && !unknown) r.sized = false;
    }
    rows_[v] = r;
  }

  const ir::Graph& g_;
  std::string b_;
  std::unordered_map<const Value*, Row> rows_;
  OutputAxes output_axes_;
};

}  // namespace

std::map<std::string, std::string> prove_row_dims(const ir::Graph& graph, std::map<std::string, OutputAxes>* output_axes) {
  std::map<std::string, std::string> out;
  for (const Value* v : graph.inputs()) {
    if (v->is_initializer() || !v->type().shape) continue;
    for (const Dim& d : *v->type().shape)
      if (!d.is_fixed() && !d.param.empty() && d.param.find(" + ") == std::string::npos && !out.count(d.param) &&
          ir::parse_product(d) == ir::DimProduct{1, {d.param}}) {  // a sum or a product is not a dim of its own
        Prover p(graph, d.param);
        out[d.param] = p.run();
        if (output_axes && out[d.param].empty() && !p.output_axes().empty()) (*output_axes)[d.param] = p.output_axes();
      }
  }
  return out;
}

}  // namespace sdx::analysis
