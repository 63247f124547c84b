#include "runtime/compile_model.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "analysis/row_padding.h"
#include "ir/model_verifier.h"
#include "ir/type_inference.h"
#include "ir/verifier.h"
#include "obs/diagnostics.h"

namespace sdx::runtime {
namespace {

// Who reads an initializer ("op/name", sorted): compared before and after the optimizer.
std::vector<std::string> readers(const ir::Value* v) {
  std::vector<std::string> r;
  for (const ir::Node* n : v->users()) r.push_back(n->op_type() + "/" + n->name());
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace

Result<CompiledModel> compile_model(ir::Model& model, const opt::OptimizerOptions& options, bool prove_rows) {
  if (!model.graph) return invalid_argument("model has no graph");
  ir::Graph& g = *model.graph;
  // The gate first: type inference and every pass may assume a model that passed it.
  SDX_RETURN_IF_ERROR(ir::verify_model(model), "verifier");
  // The graph outputs' shapes as the model declares them: what the session reports (get_outputs), as
  // onnxruntime does, though inference fills in their placeholders for the passes and the row proof.
  std::vector<std::optional<std::vector<ir::Dim>>> declared;
  for (const ir::Value* v : g.outputs()) declared.push_back(v->type().shape);
  SDX_RETURN_IF_ERROR(ir::infer_types(g), "type inference");
  SDX_RETURN_IF_ERROR(ir::verify(g), "verifier");
  CompiledModel c;
  if (prove_rows) c.rows.dims = analysis::prove_row_dims(g, &c.rows.output_axes);
  std::map<std::string, std::vector<std::string>> readers_before;
  for (const ir::Value* v : g.initializers())
    if (!v->is_graph_input()) readers_before[v->name()] = readers(v);
  SDX_ASSIGN_OR_RETURN(c.optimization, opt::optimize(g, options), "graph optimizer");
  for (const ir::Value* v : g.initializers()) {
    auto it = readers_before.find(v->name());
    if (v->is_graph_input() || (it != readers_before.end() && it->second == readers(v))) c.overridable.insert(v);
  }
  if (c.optimization.total_rewrites() > 0) {
    // New values need types; a graph the optimizer broke is a bug in sdx, reported as such.
    Status st = ir::infer_types(g);
    if (st.is_ok()) st = ir::verify(g);
    if (!st.is_ok())
      return internal_error("the graph optimizer produced an invalid graph (set SDX_OPTIMIZER_ENABLED=0 to load "
                            "without it, and please report this): " + st.message());
  }
  for (size_t i = 0; i < declared.size() && i < g.outputs().size(); ++i)
    if (declared[i] && g.outputs()[i]->type().kind == ir::TypeInfo::Kind::kTensor) g.outputs()[i]->mutable_type().shape = declared[i];
  obs::Diagnostics::global().record_lazy(obs::DiagCategory::kOptimizer, obs::DiagLevel::kSummary, "OPTIMIZED", [&] {
    std::string d = std::to_string(c.optimization.nodes_before) + " -> " + std::to_string(c.optimization.nodes_after) +
                    " nodes;";
    for (const auto& [pass, n] : c.optimization.rewrites_per_pass) d += " " + pass + " x" + std::to_string(n);
    return d;
  });
  return c;
}

std::string describe_unsupported(const std::vector<const ir::Node*>& nodes) {
  std::map<std::string, std::vector<std::string>> by_op;
  for (const ir::Node* n : nodes) {
    std::string op = (n->domain().empty() ? "" : n->domain() + ".") + n->op_type() + " (opset " + std::to_string(n->opset()) + ")";
    by_op[op].push_back("'" + n->name() + "'");
  }
  std::string msg = std::to_string(by_op.size()) + " unsupported operator" + (by_op.size() == 1 ? "" : "s") + ": ";
  bool first = true;
  for (const auto& [op, names] : by_op) {
    if (!first) msg += "; ";
    first = false;
    msg += op + " at node" + (names.size() == 1 ? " " : "s ");
    for (size_t i = 0; i < names.size() && i < 8; ++i) msg += (i ? ", " : "") + names[i];
    if (names.size() > 8) msg += ", ... (" + std::to_string(names.size()) + " in all)";
  }
  return msg;
}

}  // namespace sdx::runtime
