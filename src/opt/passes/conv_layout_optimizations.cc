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
//   V: float32, 4-D, channels fixed and a multiple of 16, not a graph output, produced by a
//      convolution or a pool; every reader of this graph a convolution reading V as X or as the
//      residual R (never as W or B), or a pool whose output is blocked as well. Convolutions:
//      float32 X, a static 4-D W, group 1 or depthwise (group = output channels, one input
//      channel each); pools: 2-D, no Indices output. The blocked set is the
//      largest one meeting these conditions (values are dropped until none fails). A convolution's
//      X, Y and R may have different layouts (its kernel reorders what it must).
//   Conv nodes that produce or read a blocked value become sdx.FusedConv without activation (the
//   same computation; the ONNX ops have no layout attributes).
//
// The logical shapes do not change, only the order of the bytes of V, which no op other than those
// convolutions and pools ever sees; results are bitwise the same (the kernels compute in oneDNN's
// blocked layout either way, and the reference paths convert to and from NCHW around the same
// computation). Runs last: after ConvEpilogueFusion and ConvResidualFusion have made the fused
// convolutions (a value feeding an Add or an activation is not a candidate; ConvResidualFusion
// leaves convolutions with a layout alone). SDX_OPTIMIZER_SKIP=ConvLayoutOptimizations turns it off.
#include <algorithm>
#include <set>

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

// A 4-D float32 value with a fixed channel count that is a multiple of 16.
bool blockable(const ir::Value* v) {
  if (elem_type(v) != DType::kFloat32 || static_rank(v) != 4) return false;
  const std::optional<int64_t> c = fixed_dim(v, 1);
  return c && *c > 0 && *c % kBlock == 0;
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
  // v's producer and every reader take the blocked layout, given the current blocked set.
  static bool keeps_blocked(const ir::Graph& g, const ir::Value* v, const std::set<const ir::Value*>& blocked) {
    const ir::Node* p = v->producer();
    if (!is_conv(*p) && !blocked.count(p->input(0))) return false;  // a pool: its input too
    for (const ir::Node* u : v->users()) {
      if (u->owner() != &g) return false;
      if (is_conv(*u)) {
        for (int i = 0; i < u->num_inputs(); ++i)
          if (u->input(i) == v && i != 0 && i != 3) return false;
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
