// HorizontalFusionOptimizations (pass 16, order 1600): merges parallel matmuls that read one input
// against constant weights, the Q/K/V projections of self-attention above all, into one wider matmul
// whose result is split back, so the GEMM runs once over x with N = N1 + N2 + ... columns. Runs after
// AttentionFusionOptimizations (1500), whose pattern starts at the 4-D Q/K/V values and so does not care
// whether they come from three MatMuls or from a Split.
//
// Rewrite, for n >= 2 MatMuls reading the same x (not a constant) as input 0, each with a constant 2-D
// weight W_i [K, N_i] of one element type:
//   y_i = MatMul(x, W_i)                         ->  y = MatMul(x, concat(W_1..W_n, axis 1))
//                                                    y_1..y_n = Split(y, axis = -1, split = [N_1..N_n])
// and when every MatMul's only reader is Add(y_i, b_i) or Add(b_i, y_i) with a constant 1-D bias b_i [N_i]
// of the same element type, the biases go along:
//   z_i = Add(MatMul(x, W_i), b_i)               ->  y = Add(MatMul(x, W), concat(b_1..b_n))
//                                                    z_1..z_n = Split(y, axis = -1, split = [N_1..N_n])
// If only some of the matmuls have such a bias, the matmuls are merged and every Add stays as it is.
// The Split (opset 18, sizes as a constant input) takes over the existing output values, so graph
// outputs keep their names. Exact up to the GEMM's summation order (column position in the wider
// matrix may change how a dot product is blocked). One rewrite per merged group. The old weights stay
// as (unread) initializers: ir::Graph has no initializer removal yet.
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "opt/pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

struct Member {
  ir::Node* matmul = nullptr;
  const Tensor* weight = nullptr;
  ir::Node* add = nullptr;  // the bias Add, when it qualifies
  const Tensor* bias = nullptr;
};

bool is_op(const ir::Node* n, const char* op) { return n && n->domain().empty() && n->op_type() == op; }

// The Add that is y's only reader, with a constant [N] bias of y's element type.
void find_bias(const ir::Graph& g, Member& m) {
  ir::Value* y = m.matmul->output(0);
  if (!has_single_use(g, y)) return;
  ir::Node* add = y->users()[0];
  if (!is_op(add, "Add") || add->owner() != &g || add->num_inputs() != 2 || add->input(0) == add->input(1)) return;
  const Tensor* b = constant_value(add->input(add->input(0) == y ? 1 : 0));
  const int64_t n = m.weight->shape()[1];
  if (!b || b->rank() != 1 || b->shape()[0] != n || b->dtype() != m.weight->dtype()) return;
  m.add = add;
  m.bias = b;
}

// Concatenates tensors of shape [rows, N_i] (rows = 1 for 1-D biases) along the last axis.
Tensor concat_columns(const std::vector<const Tensor*>& parts, int64_t rows, bool one_d) {
  const DType dt = parts[0]->dtype();
  const size_t elem = dtype_storage_bytes(dt, 1);
  int64_t total = 0;
  for (const Tensor* t : parts) total += t->shape()[t->rank() - 1];
  Tensor out = Tensor::allocate(dt, one_d ? Shape{total} : Shape{rows, total}).value();
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t r = 0; r < rows; ++r)
    for (const Tensor* t : parts) {
      const int64_t n = t->shape()[t->rank() - 1];
      const size_t bytes = static_cast<size_t>(n) * elem;
      std::memcpy(dst, static_cast<const char*>(t->raw_data()) + static_cast<size_t>(r * n) * elem, bytes);
      dst += bytes;
    }
  return out;
}

class HorizontalFusionOptimizations final : public Pass {
 public:
  const char* name() const override { return "HorizontalFusionOptimizations"; }
  PassCategory category() const override { return PassCategory::kFusion; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    const int before = ctx.count();
    std::vector<ir::Node*> snapshot;
    for (const auto& n : g.nodes()) snapshot.push_back(n.get());
    std::set<const ir::Value*> seen;
    for (ir::Node* n : snapshot) {
      if (n->removed() || !is_op(n, "MatMul") || !n->input(0) || !seen.insert(n->input(0)).second) continue;
      for (std::vector<Member>& group : groups_reading(g, n->input(0))) merge(g, group, ctx);
    }
    return ctx.count() - before;
  }

 private:
  // The MatMuls reading x as input 0 with a constant 2-D weight, grouped by (element type, K), in graph order.
  static std::vector<std::vector<Member>> groups_reading(const ir::Graph& g, ir::Value* x) {
    std::map<std::pair<DType, int64_t>, std::vector<Member>> by_key;
    std::vector<std::pair<DType, int64_t>> order;
    if (constant_value(x)) return {};
    std::set<const ir::Node*> taken;
    for (ir::Node* u : x->users()) {
      // Readers inside a subgraph (an If branch reading x from the outer scope) stay where they are.
      if (!is_op(u, "MatMul") || u->owner() != &g || u->num_outputs() != 1 || u->input(0) != x ||
          !taken.insert(u).second)
        continue;
      const Tensor* w = constant_value(u->input(1));
      if (!w || w->rank() != 2 || !dtype_is_byte_addressable(w->dtype()) || w->dtype() == DType::kString) continue;
      if (u->input(1) == x || w->shape()[1] == 0) continue;
      Member m{u, w, nullptr, nullptr};
      find_bias(g, m);
      const auto key = std::make_pair(w->dtype(), w->shape()[0]);
      if (!by_key.count(key)) order.push_back(key);
      by_key[key].push_back(m);
    }
    std::vector<std::vector<Member>> groups;
    for (const auto& key : order)
      if (by_key[key].size() >= 2) groups.push_back(std::move(by_key[key]));
    return groups;
  }

  static void merge(ir::Graph& g, const std::vector<Member>& group, PassContext& ctx) {
    bool biased = true;
    for (const Member& m : group) biased = biased && m.add;
    std::vector<const Tensor*> weights, biases;
    std::vector<int64_t> sizes;
    std::vector<ir::Value*> outs;
    std::vector<ir::Node*> removed;
    for (const Member& m : group) {
      weights.push_back(m.weight);
      sizes.push_back(m.weight->shape()[1]);
      if (biased) {
        biases.push_back(m.bias);
        outs.push_back(m.add->output(0));
        removed.push_back(m.add);
      } else {
        outs.push_back(m.matmul->output(0));
      }
      removed.push_back(m.matmul);
    }
    ir::Node* first = group[0].matmul;
    const std::string base = first->name().empty() ? g.unique_name("matmul") : first->name();
    ir::Value* x = first->input(0);
    ir::Value* w = g.add_constant(base + "/merged_weight", concat_columns(weights, weights[0]->shape()[0], false));
    for (ir::Node* n : removed) g.remove_node(n);

    const std::string mm_name = g.unique_name(base + "/merged");
    ir::Node* mm = g.add_node("MatMul", "", mm_name, {x, w}, {g.unique_name(mm_name + "_out")});
    mm->set_opset(first->opset());
    ir::Value* y = mm->output(0);
    if (biased) {
      ir::Value* b = g.add_constant(base + "/merged_bias", concat_columns(biases, 1, true));
      const std::string add_name = g.unique_name(base + "/merged_bias_add");
      ir::Node* add = g.add_node("Add", "", add_name, {y, b}, {g.unique_name(add_name + "_out")});
      add->set_opset(group[0].add->opset());
      y = add->output(0);
    }
    Tensor split_sizes = Tensor::allocate(DType::kInt64, Shape{static_cast<int64_t>(sizes.size())}).value();
    for (size_t i = 0; i < sizes.size(); ++i) split_sizes.data<int64_t>()[i] = sizes[i];
    ir::Value* split_input = g.add_constant(base + "/split_sizes", std::move(split_sizes));
    ir::Node* split = g.add_node_with_outputs("Split", "", g.unique_name(base + "/split"), {y, split_input}, outs);
    split->set_opset(18);  // the sizes as an input (13+); 18 also knows num_outputs, which is not needed here
    split->add_attribute(attr_int("axis", -1));
    ctx.applied(*first, std::to_string(group.size()) + " MatMul(x, W_i)" + (biased ? " + b_i" : "") +
                            " -> MatMul(x, concat(W_i))" + (biased ? " + concat(b_i)" : "") + " -> Split");
  }
};

const PassRegistrar kRegistrar("fuse_sibling_matmuls", [] { return std::make_unique<HorizontalFusionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
