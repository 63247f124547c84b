// ConvLayoutOptimizations (pass 26, a CPU backend pass after ConvResidualFusion): tensors passed
// only between 2-D float32 convolutions (and the pools between them) stay channel-blocked
// (NCHW16c, backend/cpu/tensor/channel_blocked.h), so oneDNN's blocked kernels read and write them in place
// instead of reordering them from and to NCHW around every convolution (the layout onnxruntime's
// NCHWc transformer uses for the same reason); sdx's depthwise kernel reads and writes it too, so
// a mobile CNN's 1x1 / depthwise / 1x1 chains stay blocked.
//
//   V = Conv|sdx.FusedConv(...)            producer: output_layout = "NCHW16c"
//   sdx.FusedConv(V, ...)                  reader as X: input_layout = "NCHW16c"
//   sdx.FusedConv(X, W, B, V)              reader as the residual: residual_layout = "NCHW16c"
//   MaxPool|AveragePool(V) -> V2           -> sdx.BlockedMaxPool|BlockedAveragePool(V) -> V2, when V2
//                                             is blocked too (the pools read and write one layout)
//
//   V: float32, 4-D, channels fixed (a multiple of 16, or padded: below), not a graph output, produced by a
//      convolution or a pool; every reader of this graph a convolution reading V as X or as the
//      residual R (never as W or B), or a pool whose output is blocked as well. Convolutions:
//      float32 X, a static 4-D W, group 1 or depthwise (group = output channels, one input
//      channel each); pools: 2-D, no Indices output. The blocked set is the
//      largest one meeting these conditions (values are dropped until none fails). A convolution's
//      X, Y and R may have different layouts (its kernel reorders what it must).
//   Conv nodes that produce or read a blocked value become sdx.FusedConv without activation (the
//   same computation; the ONNX ops have no layout attributes).
//
// Channel padding: a value of C channels, C not a multiple of 16 (MobileNet's 24, 40, 72, an OCR
// model's 88; at least 8, and padding adds at most half), is blocked too, padded to C' = C rounded up
// to 16 channels, as onnxruntime's NCHWc transformer pads. Its producer then computes C' output
// channels, the extra ones with zero weights and zero bias (so they hold act(0), a finite number), and
// every reader adds C' - C input channels with zero weights (so they add exact zeros): oneDNN's blocked
// kernels pad to 16 channels internally anyway, so no multiply-add is added, and the reorders between
// the convolutions go. Conditions on a padded V, besides the above: the convolutions whose weights
// change have constant W and B (new initializers are made, the originals stay for their other
// readers); a depthwise convolution pads its input and its output alike (its group count becomes C'),
// so both must be in the blocked set, as must a pool's, and a convolution with a padded residual has a
// padded output. The graph's shape of V and of every padded pool output becomes [N, C', H, W] (what
// the debugger shows of them, like their blocked byte order, is the kernels' view); no value outside
// the set changes.
//
// The logical shapes of values with 16-channel multiples do not change, only the order of the bytes of
// V, which no op other than those convolutions and pools ever sees; results are bitwise the same (the
// kernels compute in oneDNN's blocked layout either way, and the reference paths convert to and from
// NCHW around the same computation). A padded chain gives the same values up to the order of the
// sums (a padded 3x3 convolution may take oneDNN's Winograd kernel) and the sign of a zero result. Runs last: after ConvEpilogueFusion and ConvResidualFusion have made the fused
// convolutions (a value feeding an Add or an activation is not a candidate; ConvResidualFusion
// leaves convolutions with a layout alone). SDX_OPTIMIZER_SKIP=ConvLayoutOptimizations turns it off.
#include <algorithm>
#include <set>

#include "opt/fusion_util.h"
#include "opt/pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr const char* kBlocked = "NCHW16c";
constexpr int64_t kBlock = 16;

bool is_fused_conv(const ir::Node& n) { return n.op_type() == "FusedConv" && n.domain() == "sdx"; }

// A convolution the CPU kernels run on channel-blocked tensors: Conv or sdx.FusedConv with float32
// X, a static 4-D W, and group 1 (oneDNN's blocked kernels) or one input and one output channel
// per group (the depthwise kernel's blocked loops, conv/depthwise_conv.h).
bool is_conv(const ir::Node& n) {
  const bool conv = n.op_type() == "Conv" && n.domain().empty();
  if ((!conv && !is_fused_conv(n)) || n.num_inputs() < 2 || n.num_outputs() != 1 || !n.input(0) || !n.input(1))
    return false;
  if (conv && n.num_inputs() > 3) return false;
  auto ws = static_shape(n.input(1));
  if (elem_type(n.input(0)) != DType::kFloat32 || !ws || ws->size() != 4) return false;
  const int64_t group = n.attr_int("group", 1);
  return group == 1 || ((*ws)[0] == group && (*ws)[1] == 1);
}

// The blocked op a pool becomes ("" for a node that is not a 2-D MaxPool / AveragePool without
// Indices); the blocked pools themselves map to their own names.
std::string blocked_pool_op(const ir::Node& n) {
  std::string op;
  if (n.domain().empty() && (n.op_type() == "MaxPool" || n.op_type() == "AveragePool")) op = "Blocked" + n.op_type();
  if (n.domain() == "sdx" && (n.op_type() == "BlockedMaxPool" || n.op_type() == "BlockedAveragePool")) op = n.op_type();
  if (op.empty() || n.num_inputs() != 1 || !n.input(0) || n.attr_ints("kernel_shape").size() != 2) return "";
  for (int i = 1; i < n.num_outputs(); ++i)
    if (n.output(i)) return "";  // MaxPool's Indices
  return elem_type(n.input(0)) == DType::kFloat32 ? op : "";
}

int64_t padded_channels(int64_t c) { return (c + kBlock - 1) / kBlock * kBlock; }

// A 4-D float32 value with a fixed channel count that is a multiple of 16, or at least 8 that padding
// grows by at most half (24 -> 32, 72 -> 80, not 6 -> 16: oneDNN reads a handful of channels as NCHW,
// and 16 would multiply the reader's work).
bool blockable(const ir::Value* v) {
  if (elem_type(v) != DType::kFloat32 || static_rank(v) != 4) return false;
  const std::optional<int64_t> c = fixed_dim(v, 1);
  return c && *c > 0 && (*c % kBlock == 0 || (*c >= 8 && 2 * padded_channels(*c) <= 3 * *c));
}

// A blockable value whose channels are padded to a multiple of 16 when it is blocked.
bool needs_padding(const ir::Value* v) { return fixed_dim(v, 1).value_or(0) % kBlock != 0; }

// A convolution (is_conv) with one input channel per group (is_conv allows only that besides group 1).
bool is_depthwise(const ir::Node& n) { return n.attr_int("group", 1) != 1; }

// A convolution whose W and B (if any) are constants, so padded copies can be made.
bool constant_weights(const ir::Node& n) {
  if (!constant_value(n.input(1))) return false;
  return n.num_inputs() < 3 || !n.input(2) || constant_value(n.input(2));
}

// The residual input of a convolution (sdx.FusedConv's R), or null.
const ir::Value* residual_of(const ir::Node& n) { return n.num_inputs() > 3 ? n.input(3) : nullptr; }

// W [M, Cg, kh, kw] and B [M] of convolution n become [M', Cg', kh, kw] and [M'] with zeros in the new
// rows and columns: M' = M rounded up to 16 when its output is padded, Cg' likewise for a group-1
// convolution whose X is padded (a depthwise one keeps Cg = 1 and takes M' groups).
void pad_conv_weights(ir::Graph& g, ir::Node* n, bool pad_in, bool pad_out) {
  const Tensor& w = *constant_value(n->input(1));
  const int64_t M = w.shape()[0], Cg = w.shape()[1], taps = w.shape()[2] * w.shape()[3];
  const bool dw = is_depthwise(*n);
  const int64_t M2 = pad_out ? padded_channels(M) : M, Cg2 = !dw && pad_in ? padded_channels(Cg) : Cg;
  const std::vector<double> wv = float_values(w);
  std::vector<double> wp(static_cast<size_t>(M2 * Cg2 * taps), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t k = 0; k < taps; ++k)
        wp[static_cast<size_t>((m * Cg2 + c) * taps + k)] = wv[static_cast<size_t>((m * Cg + c) * taps + k)];
  g.set_input(n, 1, g.add_constant(n->input(1)->name() + "_pad16",
                                   float_tensor(w.dtype(), Shape{M2, Cg2, w.shape()[2], w.shape()[3]}, wp)));
  if (n->num_inputs() > 2 && n->input(2) && M2 != M) {
    std::vector<double> b = float_values(*constant_value(n->input(2)));
    b.resize(static_cast<size_t>(M2), 0.0);
    g.set_input(n, 2, g.add_constant(n->input(2)->name() + "_pad16", float_tensor(w.dtype(), Shape{M2}, b)));
  }
  if (dw) n->set_attribute(attr_int("group", M2));
}

// The graph's channel count of a padded value.
void set_padded_shape(ir::Value* v) {
  ir::Dim& c = v->mutable_type().shape->at(1);
  c = ir::Dim::fixed(padded_channels(c.value));
}

// n as an sdx.FusedConv: a Conv becomes one without activation (it keeps its inputs, outputs and
// attributes).
ir::Node* as_fused_conv(ir::Graph& g, ir::Node* n) {
  if (n->domain() == "sdx") return n;
  const std::vector<ir::Value*> inputs = n->inputs();
  return fuse(g, {n}, n, "FusedConv", "sdx", 1, inputs, n->attributes());
}

// Sets attribute `name` to NCHW16c; true when it was not already.
bool set_blocked(ir::Node* n, const char* name) {
  if (n->attr_string(name, "NCHW") == kBlocked) return false;
  n->set_attribute(attr_string(name, kBlocked));
  return true;
}

class ConvLayoutOptimizations final : public Pass {
 public:
  const char* name() const override { return "ConvLayoutOptimizations"; }
  PassCategory category() const override { return PassCategory::kLayout; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    const int before = ctx.count();
    std::vector<ir::Value*> order;  // the candidates in graph order, for a stable rewrite log
    std::set<const ir::Value*> blocked;
    for (const auto& n : g.nodes()) {
      if (n->removed() || (!is_conv(*n) && blocked_pool_op(*n).empty())) continue;
      ir::Value* v = n->output(0);
      if (v && blockable(v) && !g.is_output(v) && !v->users().empty()) {
        order.push_back(v);
        blocked.insert(v);
      }
    }
    // Drop values whose producer or readers cannot take the layout, until none is dropped.
    for (bool dropped = true; dropped;) {
      dropped = false;
      for (ir::Value* v : order)
        if (blocked.count(v) && !keeps_blocked(g, v, blocked)) {
          blocked.erase(v);
          dropped = true;
        }
    }
    pad_channels(g, order, blocked, ctx);
    for (ir::Value* v : order) {
      if (!blocked.count(v)) continue;
      const std::vector<ir::Node*> readers = v->users();
      ir::Node* p = v->producer();
      bool changed = false;
      if (is_conv(*p)) {
        changed = set_blocked(as_fused_conv(g, p), "output_layout");
      } else if (p->domain().empty()) {
        std::vector<ir::Attribute> attrs;
        for (const ir::Attribute& a : p->attributes())
          if (a.name != "storage_order") attrs.push_back(a);
        fuse(g, {p}, p, blocked_pool_op(*p), "sdx", 1, {p->input(0)}, std::move(attrs));
        changed = true;
      }
      for (ir::Node* u : readers) {
        if (u->removed() || !is_conv(*u)) continue;  // a pool reader is rewritten as its output's producer
        ir::Node* f = as_fused_conv(g, u);
        if (f->input(0) == v) changed = set_blocked(f, "input_layout") || changed;
        if (f->num_inputs() > 3 && f->input(3) == v) changed = set_blocked(f, "residual_layout") || changed;
      }
      if (changed) ctx.applied_value(v->name(), "NCHW16c between " + p->op_type() + " and its readers");
    }
    return ctx.count() - before;
  }

 private:
  // Pads the blocked values whose channels are not a multiple of 16: their convolutions' weights, the
  // depthwise group counts, and the graph's shapes of those values.
  static void pad_channels(ir::Graph& g, const std::vector<ir::Value*>& order,
                           const std::set<const ir::Value*>& blocked, PassContext& ctx) {
    auto padded = [&](const ir::Value* v) { return v && blocked.count(v) && needs_padding(v); };
    std::vector<ir::Node*> convs;
    for (ir::Value* v : order) {
      if (!padded(v)) continue;
      if (is_conv(*v->producer())) convs.push_back(v->producer());
      for (ir::Node* u : v->users())
        if (is_conv(*u) && u->input(0) == v) convs.push_back(u);
    }
    std::set<ir::Node*> done;
    for (ir::Node* n : convs)
      if (done.insert(n).second) pad_conv_weights(g, n, padded(n->input(0)), padded(n->output(0)));
    for (ir::Value* v : order) {
      if (!padded(v)) continue;
      const int64_t c = *fixed_dim(v, 1);
      set_padded_shape(v);
      ctx.applied_value(v->name(), std::to_string(c) + " channels padded to " + std::to_string(padded_channels(c)));
    }
  }

  // v's producer and every reader take the blocked layout, given the current blocked set.
  static bool keeps_blocked(const ir::Graph& g, const ir::Value* v, const std::set<const ir::Value*>& blocked) {
    const ir::Node* p = v->producer();
    if (!is_conv(*p) && !blocked.count(p->input(0))) return false;  // a pool: its input too
    const bool pad = needs_padding(v);
    // A padded output: new weight rows; a depthwise producer pads its input as well, and a residual
    // has the output's channels.
    if (pad && is_conv(*p) &&
        (!constant_weights(*p) || (is_depthwise(*p) && !blocked.count(p->input(0))) ||
         (residual_of(*p) && !blocked.count(residual_of(*p)))))
      return false;
    for (const ir::Node* u : v->users()) {
      if (u->owner() != &g) return false;
      if (is_conv(*u)) {
        for (int i = 0; i < u->num_inputs(); ++i)
          if (u->input(i) == v && i != 0 && i != 3) return false;
        // A padded X: new weight columns, or (depthwise) a padded output; a padded residual: a padded output.
        if (pad && u->input(0) == v && (is_depthwise(*u) ? !blocked.count(u->output(0)) : !constant_weights(*u)))
          return false;
        if (pad && residual_of(*u) == v && !blocked.count(u->output(0))) return false;
      } else if (blocked_pool_op(*u).empty() || !blocked.count(u->output(0))) {
        return false;
      }
    }
    return true;
  }
};

const PassRegistrar kRegistrar("block_conv_layouts", [] { return std::make_unique<ConvLayoutOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
