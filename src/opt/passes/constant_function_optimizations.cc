// ConstantFunctionOptimizations (pass 2, constant propagation): evaluates at load time what does
// not depend on the graph inputs.
//
//   Constant(value=T)            -> initializer T   (every attribute form the Constant kernel reads:
//                                                    value, value_float(s), value_int(s), value_string(s);
//                                                    sparse_value keeps the node)
//   Op(c1, c2, ...) all constant -> initializer Op(c1, c2, ...)   computed once by Op's CPU kernel
//
// Folded values become fresh initializers (named after the value they replace); the node goes.
// What is never folded:
//  - a node with an output that is a graph output (the output keeps its name and producer);
//  - nodes with subgraphs (If/Loop/Scan), random ops (RandomNormal/Uniform[Like], Multinomial,
//    Bernoulli, Dropout), ops outside the ai.onnx, ai.onnx.ml and sdx domains;
//  - outputs that are not plain tensors (sequences, optionals);
//  - folds that grow the model: total output bytes > max(1 KiB, total bytes of the constant
//    inputs) (a float16 -> float32 Cast of a weight, a large ConstantOfShape or Expand stay nodes);
//  - nodes whose kernel fails on these inputs (the error is left for run time to report).
// The value is bitwise what the CPU backend computes at run time, so folding is exact.
#include <algorithm>
#include <optional>
#include <set>

#include "ir/op_schema.h"
#include "opt/constant_eval.h"
#include "opt/pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

constexpr size_t kMinFoldBytes = 1024;

bool is_random(const std::string& op) {
  static const std::set<std::string> kRandom = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"};
  return kRandom.count(op) > 0;
}

bool foldable_domain(const std::string& domain) {
  const std::string d = ir::normalize_domain(domain);
  return d.empty() || d == "ai.onnx.ml" || d == "sdx";
}

// Bytes of a value when its type and shape are static, for refusing a fold before running it.
std::optional<size_t> static_bytes(const ir::Value* v) {
  const auto& t = v->type();
  if (t.kind != ir::TypeInfo::Kind::kTensor || t.elem == DType::kUndefined) return std::nullopt;
  auto dims = static_shape(v);
  if (!dims) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : *dims)
    if (__builtin_mul_overflow(n, d, &n)) return SIZE_MAX;
  return dtype_storage_bytes(t.elem, n);
}

class ConstantFunctionOptimizations final : public Pass {
 public:
  const char* name() const override { return "ConstantFunctionOptimizations"; }
  PassCategory category() const override { return PassCategory::kConstant; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    const int before = ctx.count();
    // Topological order: a node whose producers fold earlier in this sweep folds in this sweep too.
    std::vector<ir::Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (ir::Node* n : order)
      if (!n->removed()) fold(g, n, ctx);
    return ctx.count() - before;
  }

 private:
  static void fold(ir::Graph& g, ir::Node* n, PassContext& ctx) {
    if (!foldable_domain(n->domain()) || !n->subgraphs().empty() || n->num_outputs() == 0) return;
    const bool is_constant_node = n->domain().empty() && n->op_type() == "Constant";
    if (!is_constant_node && n->domain().empty() && is_random(n->op_type())) return;
    bool any_output = false;
    for (const ir::Value* v : n->outputs()) {
      if (!v) continue;
      if (g.is_output(v)) return;
      const auto kind = v->type().kind;
      if (kind != ir::TypeInfo::Kind::kTensor && kind != ir::TypeInfo::Kind::kUnknown) return;
      any_output = true;
    }
    if (!any_output) return;

    std::vector<const Tensor*> inputs;
    size_t input_bytes = 0;
    int present = 0;
    for (const ir::Value* v : n->inputs()) {
      if (!v) {
        inputs.push_back(nullptr);
        continue;
      }
      const Tensor* t = constant_value(v);
      if (!t) return;
      inputs.push_back(t);
      input_bytes += t->nbytes();
      ++present;
    }
    if (!is_constant_node && present == 0) return;

    // A Constant node's value is already in the model: turning it into an initializer never grows it.
    const size_t limit = is_constant_node ? SIZE_MAX : std::max(kMinFoldBytes, input_bytes);
    size_t known = 0;
    for (const ir::Value* v : n->outputs())
      if (v)
        if (auto b = static_bytes(v)) {
          if (*b > limit - known) return;
          known += *b;
        }

    auto outs = evaluate_node(*n, inputs);
    if (!outs.is_ok()) return;
    size_t total = 0;
    for (int i = 0; i < n->num_outputs(); ++i) {
      const ir::Value* v = n->output(i);
      if (!v) continue;
      const Datum& d = (*outs)[static_cast<size_t>(i)];
      if (!d.is_tensor() || !d.as_tensor().defined()) return;
      const Tensor& t = d.as_tensor();
      // The kernel must agree with the types the graph was checked against.
      if (v->type().elem != DType::kUndefined && v->type().elem != t.dtype()) return;
      if (auto dims = static_shape(v); dims && *dims != t.shape().dims()) return;
      if (t.nbytes() > limit - total) return;
      total += t.nbytes();
    }

    const std::string what = n->op_type() + (is_constant_node ? " -> initializer" : " of constants -> initializer");
    ctx.applied(*n, what);
    std::vector<std::pair<ir::Value*, Tensor>> folded;
    for (int i = 0; i < n->num_outputs(); ++i)
      if (ir::Value* v = n->output(i)) folded.emplace_back(v, (*outs)[static_cast<size_t>(i)].as_tensor());
    g.remove_node(n);
    for (auto& [v, t] : folded) {
      if (v->users().empty()) continue;
      g.replace_all_uses(v, g.add_constant(v->name(), std::move(t)));
    }
  }
};

const PassRegistrar kRegistrar("fold_constants", [] { return std::make_unique<ConstantFunctionOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
