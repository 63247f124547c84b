// IfInliningOptimizations (inline_constant_ifs): an If whose condition is a constant is replaced by the
// branch it always takes.
//
//   c = true (an initializer that is not a graph input, or a Constant node's `value`)
//   y = If(c, then_branch={ t = Add(x, w); out t }, else_branch={...})  ->  y = Add(x, w)
//
// The condition may become constant only after fold_constants (Equal(Constant, Constant), a Shape of static
// dims, ...): this pass runs after it, in the same round. What the inlining does:
//  - the taken branch's nodes are copied into the If's graph, in order, where the If was; a value keeps its
//    name when no graph of the model (the enclosing ones, this one, any nested one) uses it yet, otherwise it
//    gets the first free `name_<k>`; node names become `<if name>/<branch node name>`;
//  - the branch's outer-scope reads are the same values in the If's graph (they are visible there already);
//    branch initializers become initializers of the If's graph;
//  - the branch node producing the branch's i-th output produces the If's i-th output value itself (so the
//    output keeps its name, a graph output too); a branch output that is an outer value, a branch
//    initializer, or a value the branch outputs twice goes through an Identity (remove_identities drops it
//    where it can);
//  - subgraphs of the branch's nodes (a nested If, a Loop) move with their node, their parent now the If's
//    graph, their reads of branch values rewired to the copies; they are not entered.
// Never inlined: a condition that is a graph input (also when it has an initializer: callers may override
// it), a condition that is not a one-element bool tensor (the model is wrong; run time reports it), a branch
// whose output count differs from the If's, a branch with inputs.
// The pass repeats within its sweep, so an If that a just-inlined branch held, and whose condition is now a
// constant of this graph, is inlined too. Nested graphs themselves are optimized when their bodies compile to
// sessions of their own (runtime/body_session.h), where this pass runs on them as on a model.
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "opt/pass.h"
#include "opt/rewrite_util.h"

namespace sdx::opt {
namespace {

// The constant tensor a value always holds: an initializer that callers cannot override, or the `value`
// attribute of the Constant node producing it. Null when neither.
const Tensor* constant_tensor(const ir::Value* v) {
  if (!v) return nullptr;
  if (const Tensor* t = constant_value(v)) return t;
  const ir::Node* p = v->producer();
  if (!p || p->op_type() != "Constant" || !p->domain().empty()) return nullptr;
  const ir::Attribute* a = p->attr("value");
  return a && a->type == ir::AttrType::kTensor ? &a->t : nullptr;
}

// Every value name in g and the graphs nested in it, except the values of the graphs `skip` holds (its
// subgraphs' own nested graphs are skipped with them).
void collect_names(const ir::Graph& g, const ir::Node* skip, std::unordered_set<std::string>& names) {
  for (const auto& v : g.values()) names.insert(v->name());
  for (const auto& n : g.nodes()) {
    if (n->removed() || n.get() == skip) continue;
    for (const ir::Graph* sg : n->subgraphs()) collect_names(*sg, skip, names);
  }
}

// Rewires every node input and graph output of g and its nested graphs that reads a key of `map`, and
// re-registers every node input as a user of its value (the caller removed the node that held these
// graphs, which unregistered all of their reads).
void reattach(ir::Graph& g, const std::unordered_map<const ir::Value*, ir::Value*>& map) {
  auto mapped = [&](ir::Value* v) -> ir::Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  for (const auto& n : g.nodes()) {
    if (n->removed()) continue;
    const std::vector<ir::Value*> inputs = n->inputs();
    // Clear every slot first, then set each: set_input drops one registration of the node per call.
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) g.set_input(n.get(), i, nullptr);
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i)
      g.set_input(n.get(), i, mapped(inputs[static_cast<size_t>(i)]));
    for (ir::Graph* sg : n->subgraphs()) reattach(*sg, map);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) g.set_output(i, mapped(g.outputs()[i]));
}

class IfInliningOptimizations final : public Pass {
 public:
  const char* name() const override { return "IfInliningOptimizations"; }
  PassCategory category() const override { return PassCategory::kConstant; }

  Result<int> run(ir::Graph& g, PassContext& ctx) override {
    int count = 0;
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<ir::Node*> snapshot;
      for (const auto& n : g.nodes()) snapshot.push_back(n.get());
      for (ir::Node* n : snapshot) {
        if (n->removed() || n->op_type() != "If" || !n->domain().empty()) continue;
        if (inline_if(g, n, ctx)) {
          ++count;
          changed = true;
        }
      }
    }
    return count;
  }

 private:
  static bool inline_if(ir::Graph& g, ir::Node* n, PassContext& ctx) {
    const Tensor* cond = constant_tensor(n->input(0));
    if (!cond || cond->dtype() != DType::kBool || cond->numel() != 1) return false;
    const bool taken = cond->data<uint8_t>()[0] != 0;
    const ir::Attribute* attr = n->attr(taken ? "then_branch" : "else_branch");
    if (!attr || !attr->g) return false;
    std::shared_ptr<ir::Graph> branch = attr->g;  // kept alive past the If's removal
    if (!branch->inputs().empty() || static_cast<int>(branch->outputs().size()) != n->num_outputs()) return false;

    // Names every graph of the model uses once the If is gone (the taken branch's nested graphs stay).
    const ir::Graph* root = &g;
    while (root->parent()) root = root->parent();
    std::unordered_set<std::string> names;
    collect_names(*root, n, names);
    for (const auto& bn : branch->nodes())
      if (!bn->removed())
        for (const ir::Graph* sg : bn->subgraphs()) collect_names(*sg, nullptr, names);
    auto fresh = [&](const std::string& base) {
      std::string name = base;
      for (int k = 1; names.count(name); ++k) name = base + "_" + std::to_string(k);
      names.insert(name);
      return name;
    };

    // Which branch value produces which If output directly (the first output naming a node-produced value).
    std::unordered_map<const ir::Value*, ir::Value*> takes_over;
    std::vector<bool> via_identity(static_cast<size_t>(n->num_outputs()), true);
    for (int i = 0; i < n->num_outputs(); ++i) {
      const ir::Value* bo = branch->outputs()[static_cast<size_t>(i)];
      ir::Value* out = n->output(i);
      if (bo && out && bo->owner() == branch.get() && bo->producer() && !takes_over.count(bo)) {
        takes_over[bo] = out;
        via_identity[static_cast<size_t>(i)] = false;
      }
    }
    ctx.applied(*n, std::string("If(constant ") + (taken ? "true" : "false") + ") -> " +
                        (taken ? "then_branch" : "else_branch") + " inlined");
    const std::string prefix = n->name().empty() ? "if" : n->name();
    const int opset = n->opset();
    const std::vector<ir::Value*> if_outputs = n->outputs();
    const ir::Node* anchor = nullptr;  // the node after the If, where the branch's nodes go
    for (size_t i = 0; i + 1 < g.nodes().size(); ++i)
      if (g.nodes()[i].get() == n) anchor = g.nodes()[i + 1].get();
    g.remove_node(n);  // unregisters every read of both branches and their nested graphs

    std::unordered_map<const ir::Value*, ir::Value*> map;
    for (const auto& v : branch->values())
      if (v->is_initializer()) map[v.get()] = g.add_initializer(fresh(v->name()), v->initializer());
    auto mapped = [&](ir::Value* v) -> ir::Value* {
      if (!v) return nullptr;
      auto it = map.find(v);
      return it == map.end() ? v : it->second;  // not the branch's: an outer value, visible here too
    };
    std::vector<ir::Node*> added;
    for (const auto& bn : branch->nodes()) {
      if (bn->removed()) continue;
      std::vector<ir::Value*> inputs;
      for (ir::Value* v : bn->inputs()) inputs.push_back(mapped(v));
      std::vector<ir::Value*> outputs;
      for (ir::Value* v : bn->outputs()) {
        if (!v) {
          outputs.push_back(nullptr);
          continue;
        }
        auto it = takes_over.find(v);
        ir::Value* out = it != takes_over.end() ? it->second : g.add_value(fresh(v->name()), v->type());
        map[v] = out;
        outputs.push_back(out);
      }
      ir::Node* c = g.add_node_with_outputs(bn->op_type(), bn->domain(), prefix + "/" + bn->name(), inputs, outputs);
      c->set_opset(bn->opset());
      for (const ir::Attribute& a : bn->attributes()) c->add_attribute(a);  // graphs shared: they move
      added.push_back(c);
    }
    for (int i = 0; i < static_cast<int>(if_outputs.size()); ++i) {
      ir::Value* out = if_outputs[static_cast<size_t>(i)];
      if (!out || !via_identity[static_cast<size_t>(i)]) continue;
      ir::Node* id = g.add_node_with_outputs("Identity", "", prefix + "/output_" + std::to_string(i),
                                             {mapped(branch->outputs()[static_cast<size_t>(i)])}, {out});
      id->set_opset(opset);
      added.push_back(id);
    }
    // The moved subgraphs: their parent is g now, and their reads of branch values read the copies.
    for (ir::Node* c : added)
      for (ir::Graph* sg : c->subgraphs()) {
        sg->set_parent(&g);
        reattach(*sg, map);
      }
    if (anchor)
      for (ir::Node* c : added) g.move_node_before(c, anchor);
    return true;
  }
};

const PassRegistrar kRegistrar("inline_constant_ifs", [] { return std::make_unique<IfInliningOptimizations>(); });

}  // namespace
}  // namespace sdx::opt
