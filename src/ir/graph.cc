#include "ir/graph.h"

#include <algorithm>
#include <unordered_set>

namespace sdx::ir {

const char* attr_type_name(AttrType t) {
  static const char* kNames[] = {"undefined", "float", "int", "string", "tensor", "graph", "floats", "ints",
                                 "strings", "tensors", "graphs", "type_proto", "type_protos", "sparse_tensor"};
  return kNames[static_cast<int>(t)];
}

const Attribute* Node::attr(const std::string& name) const {
  for (const Attribute& a : attrs_)
    if (a.name == name) return &a;
  return nullptr;
}

int64_t Node::attr_int(const std::string& name, int64_t def) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kInt ? a->i : def;
}

float Node::attr_float(const std::string& name, float def) const {
  const Attribute* a = attr(name);
  if (!a) return def;
  if (a->type == AttrType::kFloat) return a->f;
  if (a->type == AttrType::kInt) return static_cast<float>(a->i);
  return def;
}

std::string Node::attr_string(const std::string& name, const std::string& def) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kString ? a->s : def;
}

std::vector<int64_t> Node::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kInts ? a->ints : def;
}

std::vector<float> Node::attr_floats(const std::string& name, std::vector<float> def) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kFloats ? a->floats : def;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const Attribute& a : attrs_) {
    if (a.g) out.push_back(a.g.get());
    for (const auto& g : a.graphs) out.push_back(g.get());
  }
  return out;
}

std::string Node::describe() const {
  return "node '" + name_ + "' (" + (domain_.empty() ? "" : domain_ + ".") + op_type_ + ")";
}

Value* Graph::add_value(const std::string& name, TypeInfo type) {
  auto v = std::make_unique<Value>();
  v->name_ = name;
  v->type_ = std::move(type);
  v->owner_ = this;
  v->index_ = static_cast<int>(values_.size());
  Value* raw = v.get();
  values_.push_back(std::move(v));
  if (!name.empty()) by_name_[name] = raw;
  return raw;
}

Value* Graph::add_input(const std::string& name, TypeInfo type) {
  Value* v = add_value(name, std::move(type));
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_initializer(const std::string& name, Tensor t) {
  Value* v = find_value(name);
  if (!v) v = add_value(name, TypeInfo::tensor(t.dtype()));
  std::vector<Dim> dims;
  for (int64_t d : t.shape().dims()) dims.push_back(Dim::fixed(d));
  v->type_ = TypeInfo::tensor(t.dtype(), std::move(dims));
  v->initializer_ = std::move(t);
  return v;
}

Node* Graph::add_node(const std::string& op_type, const std::string& domain, const std::string& name,
                      const std::vector<Value*>& inputs, const std::vector<std::string>& outputs) {
  auto n = std::make_unique<Node>();
  n->op_type_ = op_type;
  n->domain_ = domain;
  n->name_ = name;
  n->owner_ = this;
  n->inputs_ = inputs;
  for (Value* v : inputs)
    if (v) v->users_.push_back(n.get());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].empty()) {
      n->outputs_.push_back(nullptr);
      continue;
    }
    Value* v = add_value(outputs[i]);
    v->producer_ = n.get();
    v->producer_output_ = static_cast<int>(i);
    n->outputs_.push_back(v);
  }
  Node* raw = n.get();
  nodes_.push_back(std::move(n));
  return raw;
}

Node* Graph::add_node_with_outputs(const std::string& op_type, const std::string& domain, const std::string& name,
                                   const std::vector<Value*>& inputs, const std::vector<Value*>& outputs) {
  Node* n = add_node(op_type, domain, name, inputs, {});
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* v = outputs[i];
    if (v) {
      SDX_ASSERT(v->producer_ == nullptr && v->owner_ == this);
      v->producer_ = n;
      v->producer_output_ = static_cast<int>(i);
    }
    n->outputs_.push_back(v);
  }
  return n;
}

void Graph::drop_user(Value* v, const Node* n) {
  auto& u = v->users_;
  for (size_t i = 0; i < u.size(); ++i)
    if (u[i] == n) {
      u.erase(u.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}
// Unregisters n and the nodes of its subgraphs from the values they read.
void Graph::drop_uses(Node* n) {
  for (Value* v : n->inputs())
    if (v) drop_user(v, n);
  for (Graph* sg : n->subgraphs())
    for (const auto& sn : sg->nodes()) drop_uses(sn.get());
}

void Node::set_attribute(Attribute a) {
  for (Attribute& x : attrs_)
    if (x.name == a.name) {
      x = std::move(a);
      return;
    }
  attrs_.push_back(std::move(a));
}

void Node::remove_attribute(const std::string& name) {
  for (size_t i = 0; i < attrs_.size(); ++i)
    if (attrs_[i].name == name) {
      attrs_.erase(attrs_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

void Graph::remove_node(Node* n) {
  SDX_ASSERT(n->owner_ == this && !n->removed_);
  drop_uses(n);
  for (Value* v : n->outputs_)
    if (v && v->producer_ == n) {
      v->producer_ = nullptr;
      v->producer_output_ = -1;
    }
  n->removed_ = true;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == n) {
      removed_nodes_.push_back(std::move(nodes_[i]));
      nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

void Graph::collect_garbage() { removed_nodes_.clear(); }

void Graph::move_node_before(Node* n, const Node* before) {
  SDX_ASSERT(n->owner_ == this && before->owner_ == this && !n->removed_ && !before->removed_);
  if (n == before) return;
  size_t from = nodes_.size();
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == n) from = i;
  SDX_ASSERT(from < nodes_.size());
  std::unique_ptr<Node> owned = std::move(nodes_[from]);
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(from));
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == before) {
      nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(i), std::move(owned));
      return;
    }
  SDX_ASSERT(false);
}

void Graph::set_input(Node* n, int i, Value* v) {
  if (i >= n->num_inputs()) n->inputs_.resize(static_cast<size_t>(i) + 1, nullptr);
  Value*& slot = n->inputs_[static_cast<size_t>(i)];
  if (slot) drop_user(slot, n);
  slot = v;
  if (v) v->users_.push_back(n);
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Node*> users = from->users_;
  for (Node* n : users)
    for (size_t i = 0; i < n->inputs_.size(); ++i)
      if (n->inputs_[i] == from) {
        n->inputs_[i] = to;
        if (to) to->users_.push_back(n);
      }
  from->users_.clear();
}

bool Graph::is_output(const Value* v) const {
  for (const Value* o : outputs_)
    if (o == v) return true;
  return false;
}

std::string Graph::unique_name(const std::string& prefix) {
  for (;;) {
    std::string name = prefix + "_" + std::to_string(++name_counter_);
    if (!find_value(name)) return name;
  }
}

Value* Graph::add_constant(const std::string& prefix, Tensor t) {
  Value* v = add_value(unique_name(prefix));
  std::vector<Dim> dims;
  for (int64_t d : t.shape().dims()) dims.push_back(Dim::fixed(d));
  v->type_ = TypeInfo::tensor(t.dtype(), std::move(dims));
  v->initializer_ = std::move(t);
  return v;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::resolve(const std::string& name) const {
  for (const Graph* g = this; g; g = g->parent_)
    if (Value* v = g->find_value(name)) return v;
  return nullptr;
}

std::vector<Value*> Graph::initializers() const {
  std::vector<Value*> out;
  for (const auto& v : values_)
    if (v->is_initializer()) out.push_back(v.get());
  return out;
}

Status Graph::sort_topologically() {
  // Kahn's algorithm, stable with respect to the original order.
  std::unordered_map<const Node*, int> pending;
  std::unordered_map<const Value*, std::vector<Node*>> consumers;
  auto collect_outer_reads = [](const Graph& g, std::vector<Value*>& reads, auto& self) -> void {
    for (const auto& n : g.nodes()) {
      for (Value* v : n->inputs())
        if (v) reads.push_back(v);
      for (Graph* sg : n->subgraphs()) self(*sg, reads, self);
    }
  };
  for (const auto& n : nodes_) {
    std::vector<Value*> reads;
    for (Value* v : n->inputs())
      if (v) reads.push_back(v);
    for (Graph* sg : n->subgraphs()) collect_outer_reads(*sg, reads, collect_outer_reads);
    std::unordered_set<const Value*> seen;
    int count = 0;
    for (Value* v : reads) {
      if (v->owner() != this || !v->producer() || !seen.insert(v).second) continue;
      consumers[v].push_back(n.get());
      ++count;
    }
    pending[n.get()] = count;
  }
  std::vector<std::unique_ptr<Node>> sorted;
  std::vector<std::unique_ptr<Node>> rest = std::move(nodes_);
  nodes_.clear();
  // Repeatedly emit the earliest ready node; O(n^2) worst case but graphs arrive sorted almost always.
  std::vector<bool> done(rest.size(), false);
  size_t emitted = 0, cursor = 0;
  while (emitted < rest.size()) {
    bool progressed = false;
    for (size_t i = cursor; i < rest.size(); ++i) {
      if (done[i] || pending[rest[i].get()] != 0) continue;
      done[i] = true;
      ++emitted;
      progressed = true;
      for (Value* out : rest[i]->outputs()) {
        if (!out) continue;
        auto it = consumers.find(out);
        if (it == consumers.end()) continue;
        for (Node* c : it->second) --pending[c];
      }
      sorted.push_back(std::move(rest[i]));
      while (cursor < rest.size() && done[cursor]) ++cursor;
      i = cursor == 0 ? static_cast<size_t>(-1) : cursor - 1;
    }
    if (!progressed) {
      for (size_t i = 0; i < rest.size(); ++i)
        if (!done[i]) {
          std::string name = rest[i]->describe();
          for (size_t j = 0; j < rest.size(); ++j)
            if (!done[j]) sorted.push_back(std::move(rest[j]));
          nodes_ = std::move(sorted);
          return invalid_argument("graph '" + name_ + "' has a cycle involving " + name);
        }
    }
  }
  nodes_ = std::move(sorted);
  return Status::ok();
}

}  // namespace sdx::ir
