#include "ir/lift_subgraph.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace sdx::ir {
namespace {

bool within(const Graph* g, const Graph* root) {
  for (; g; g = g->parent())
    if (g == root) return true;
  return false;
}

// Every value that a node of g (or of a graph nested in it), or an output of g, reads from outside root,
// in first-read order.
void collect_free(const Graph& g, const Graph& root, std::vector<const Value*>& free,
                  std::unordered_set<const Value*>& seen) {
  auto visit = [&](const Value* v) {
    if (v && !within(v->owner(), &root) && seen.insert(v).second) free.push_back(v);
  };
  for (const auto& n : g.nodes()) {
    if (n->removed()) continue;
    for (const Value* v : n->inputs()) visit(v);
    for (const Graph* sg : n->subgraphs()) collect_free(*sg, root, free, seen);
  }
  for (const Value* v : g.outputs()) visit(v);
}

class Cloner {
 public:
  explicit Cloner(std::unordered_map<const Value*, Value*> map) : map_(std::move(map)) {}

  // Copies src's inputs, initializers and nodes into dst (an empty graph; its outer scope already mapped).
  // inputs: add src's inputs to dst first (false: the caller mapped them already).
  Status clone_into(const Graph& src, Graph& dst, bool inputs = true) {
    if (inputs)
      for (const Value* v : src.inputs()) map_[v] = dst.add_input(v->name(), v->type());
    for (const auto& v : src.values())
      if (v->is_initializer()) map_[v.get()] = dst.add_initializer(v->name(), v->initializer());  // an input too: same value
    for (const auto& n : src.nodes()) {
      if (n->removed()) continue;
      std::vector<Value*> node_inputs;
      for (const Value* v : n->inputs()) {
        if (!v) {
          node_inputs.push_back(nullptr);
          continue;
        }
        auto it = map_.find(v);
        if (it == map_.end())
          return invalid_argument(n->describe() + " in graph '" + src.name() + "' reads '" + v->name() +
                                  "', which nothing before it defines");
        node_inputs.push_back(it->second);
      }
      std::vector<std::string> outputs;
      for (const Value* v : n->outputs()) outputs.push_back(v ? v->name() : "");
      Node* c = dst.add_node(n->op_type(), n->domain(), n->name(), node_inputs, outputs);
      c->set_opset(n->opset());
      for (int i = 0; i < n->num_outputs(); ++i)
        if (const Value* v = n->output(i)) {
          c->output(i)->mutable_type() = v->type();
          map_[v] = c->output(i);
        }
      for (const Attribute& a : n->attributes()) {
        Attribute copy = a;
        if (a.g) {
          SDX_ASSIGN_OR_RETURN(copy.g, clone_nested(*a.g, dst), "");
        }
        for (size_t i = 0; i < a.graphs.size(); ++i) {
          SDX_ASSIGN_OR_RETURN(copy.graphs[i], clone_nested(*a.graphs[i], dst), "");
        }
        c->add_attribute(std::move(copy));
      }
    }
    return Status::ok();
  }

  Value* mapped(const Value* v) const {
    auto it = map_.find(v);
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  Result<std::shared_ptr<Graph>> clone_nested(const Graph& src, Graph& parent) {
    auto g = std::make_shared<Graph>(src.name(), &parent);
    SDX_RETURN_IF_ERROR(clone_into(src, *g), "");
    for (const Value* v : src.outputs()) {
      Value* m = mapped(v);
      if (!m) return invalid_argument("graph '" + src.name() + "' outputs '" + v->name() + "', which it does not define");
      g->add_output(m);
    }
    return g;
  }

  std::unordered_map<const Value*, Value*> map_;
};

}  // namespace

Result<LiftedBody> lift_subgraph(const Graph& body) {
  LiftedBody out;
  std::vector<const Value*> free;
  std::unordered_set<const Value*> seen;
  collect_free(body, body, free, seen);
  for (const Value* v : free) {
    if (v->is_initializer() && !v->is_graph_input())
      out.constants.push_back(v);
    else
      out.captured.push_back(v);
  }

  auto g = std::make_shared<Graph>(body.name());
  // The names the body's own values take, so that a captured value never collides with one.
  std::unordered_set<std::string> taken;
  for (const auto& v : body.values()) taken.insert(v->name());
  auto fresh = [&](const std::string& name) {
    std::string n = name.empty() ? "outer" : name;
    for (int i = 1; taken.count(n); ++i) n = name + "_outer" + std::to_string(i);
    taken.insert(n);
    return n;
  };
  // The body's inputs first, then the captured values; outer constants become initializers. All are
  // mapped before any node is copied.
  std::unordered_map<const Value*, Value*> map;
  auto typed = [&](const Value* v) {
    if (v->type().kind != TypeInfo::Kind::kUnknown) return v->type();
    out.assumed_tensors.push_back(static_cast<int>(g->inputs().size()));
    return TypeInfo::tensor(DType::kUndefined);
  };
  for (const Value* v : body.inputs()) map[v] = g->add_input(v->name(), typed(v));
  for (const Value* v : out.captured) map[v] = g->add_input(fresh(v->name()), typed(v));
  for (const Value* v : out.constants) map[v] = g->add_initializer(fresh(v->name()), v->initializer());

  Cloner cloner(std::move(map));
  SDX_RETURN_IF_ERROR(cloner.clone_into(body, *g, /*inputs=*/false), "lifting graph '" + body.name() + "'");
  std::unordered_set<const Value*> output_values;
  for (const Value* v : body.outputs()) {
    Value* m = cloner.mapped(v);
    if (!m)
      return invalid_argument("graph '" + body.name() + "' outputs '" + v->name() + "', which it does not define");
    if (m->is_graph_input() || m->is_initializer() || !output_values.insert(m).second) {
      Node* id = g->add_node("Identity", "", g->unique_name(v->name() + "_out"), {m}, {g->unique_name(v->name() + "_out")});
      id->output(0)->mutable_type() = m->type();
      m = id->output(0);
    }
    g->add_output(m);
  }
  out.graph = std::move(g);
  return out;
}

}  // namespace sdx::ir
