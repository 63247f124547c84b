// SharedWeightBatchingOptimizations (order 1650): products that apply one constant weight to different
// rows of one tensor run as a single product over all those rows. An unrolled recurrent network exported
// step by step (captcha_whisperer's CRNN: 20 LSTM cells per direction, each with its own
// Gemm(Gather(seq, t), W_ih, b_ih, transB = 1) over W_ih [400, 4096]) otherwise streams W once per step,
// as a batch-1 GEMV bound by memory; batched, the product reads W once for all the steps.
//
// Rewrite, for n >= 2 nodes of one op (Gemm, or MatMul with a 2-D weight) with the same weight (and
// bias, and attributes), each reading x_i = Gather(S, c_i, axis 0) of the same S with a constant scalar
// index c_i (not a constant S):
//   y_i = Gemm(x_i, W, b)   ->  y = Gemm(Concat(x_1 .. x_n, axis 0), W, b)
//                               y_1 .. y_n = Split(y, axis 0, num_outputs = n)
// Each x_i has the rows of one slice of S, all of the same shape, so the Split (opset 18, equal parts)
// hands every node its own rows back; the Split takes over the old output values, so graph outputs keep
// their names. The x_i depend only on S, so the merged product cannot form a cycle. Exact up to the
// GEMM's summation order (a row's dot products may be blocked differently in a taller product).
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "opt/pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->domain().empty() && n->op_type() == op; }

// x = Gather(S, c, axis 0) with a constant integer scalar c: S, else null.
ir::Value* gathered_from(const ir::Graph& g, const ir::Value* x) {
  ir::Node* gather = producer_of(x, "Gather");
  if (!gather || gather->owner() != &g || gather->num_inputs() != 2 || gather->attr_int("axis", 0) != 0)
    return nullptr;
  const Tensor* c = constant_value(gather->input(1));
  if (!c || c->rank() != 0 || (c->dtype() != DType::kInt32 && c->dtype() != DType::kInt64)) return nullptr;
  ir::Value* s = gather->input(0);
  return s && !constant_value(s) ? s : nullptr;
}

// A product this pass can batch: Gemm (transA = 0, 2-D input, a constant bias of one row or none) or
// MatMul of an input of known rank >= 2, with a constant 2-D weight.
bool batchable(const ir::Graph& g, const ir::Node& n) {
  if (n.owner() != &g || n.num_outputs() != 1 || n.num_inputs() < 2 || !n.input(0)) return false;
  const Tensor* w = constant_value(n.input(1));
  if (!w || w->rank() != 2) return false;
  if (is_op(&n, "Gemm")) {
    // A bias of one row (or none) applies to every row of the taller product.
    const ir::Value* c = n.input(2);
    const Tensor* ct = c ? constant_value(c) : nullptr;
    if (c && (!ct || (ct->rank() == 2 && ct->shape()[0] != 1) || ct->rank() > 2)) return false;
    return n.attr_int("transA", 0) == 0 && static_rank(n.input(0)) == 2;
  }
  // A 1-D row (Gather of a 2-D S) would concatenate into one longer vector, not into rows.
  const std::optional<int> rank = static_rank(n.input(0));
  return is_op(&n, "MatMul") && n.num_inputs() == 2 && rank && *rank >= 2;
}

class SharedWeightBatchingOptimizations final : public Pass {
 public:
  const char* name() const override { return "SharedWeightBatchingOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    const int before = ctx.count();
    // (op, S, W, bias) -> the nodes, in graph order.
    using Key = std::tuple<std::string, const ir::Value*, const ir::Value*, const ir::Value*>;
    std::map<Key, std::vector<ir::Node*>> groups;
    std::vector<Key> order;
    for (const auto& owned : g.nodes()) {
      ir::Node* n = owned.get();
      if (n->removed() || !batchable(g, *n)) continue;
      const ir::Value* s = gathered_from(g, n->input(0));
      if (!s) continue;
      const Key key{n->op_type(), s, n->input(1), n->input(2)};
      if (!groups.count(key)) order.push_back(key);
      groups[key].push_back(n);
    }
    for (const Key& key : order) {
      // Those with the first one's attributes (the others wait for the next round).
      std::vector<ir::Node*> same;
      for (ir::Node* n : groups[key])
        if (same_attributes(*groups[key][0], *n)) same.push_back(n);
      if (same.size() >= 2) merge(g, same, ctx);
    }
    return ctx.count() - before;
  }

 private:
  static void merge(ir::Graph& g, const std::vector<ir::Node*>& group, PassContext& ctx) {
    ir::Node* first = group[0];
    const std::string base = g.unique_name((first->name().empty() ? first->op_type() : first->name()) + "/batched");
    std::vector<ir::Value*> rows, outs;
    for (ir::Node* n : group) {
      rows.push_back(n->input(0));
      outs.push_back(n->output(0));
    }
    std::vector<ir::Value*> inputs(first->inputs().begin(), first->inputs().end());
    const std::vector<ir::Attribute> attrs = first->attributes();
    const std::string op = first->op_type();
    const int opset = first->opset();
    const std::string anchor = first->name();
    for (ir::Node* n : group) g.remove_node(n);

    ir::Node* concat = g.add_node("Concat", "", base + "/rows", rows, {g.unique_name(base + "/rows_out")});
    concat->set_opset(13);
    concat->add_attribute(attr_int("axis", 0));
    inputs[0] = concat->output(0);
    ir::Node* product = g.add_node(op, "", base, inputs, {g.unique_name(base + "_out")});
    product->set_opset(opset);
    for (const ir::Attribute& a : attrs) product->add_attribute(a);
    ir::Node* split = g.add_node_with_outputs("Split", "", g.unique_name(base + "/split"), {product->output(0)}, outs);
    split->set_opset(18);
    split->add_attribute(attr_int("axis", 0));
    split->add_attribute(attr_int("num_outputs", static_cast<int64_t>(group.size())));
    ctx.applied(*product, std::to_string(group.size()) + " " + op + "(Gather(S, t_i), W) -> one " + op +
                              " over Concat of the rows -> Split (first: '" + anchor + "')");
  }
};

const PassRegistrar kRegistrar("batch_shared_weight_products",
                               [] { return std::make_unique<SharedWeightBatchingOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
