// The sdx IR: Graph owns Nodes and Values; Nodes reference Values by pointer.
// A subgraph (If/Loop/Scan body) is a Graph whose `parent` is the enclosing
// graph; its nodes may read Values owned by an ancestor graph (outer scope).
//
//   ir::Graph g("main");
//   ir::Value* x = g.add_input("x", TypeInfo::tensor(DType::kFloat32, ...));
//   ir::Node* n = g.add_node("Relu", "", "relu0", {x}, {"y"});
//   g.add_output(n->output(0));
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"
#include "ir/attribute.h"
#include "ir/type_info.h"

namespace sdx::ir {

class Graph;
class Node;

class Value {
 public:
  const std::string& name() const { return name_; }
  const TypeInfo& type() const { return type_; }
  TypeInfo& mutable_type() { return type_; }
  Graph* owner() const { return owner_; }
  // Index in owner()->values(); stable for the life of the graph.
  int index() const { return index_; }
  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  bool is_initializer() const { return initializer_.has_value(); }
  const Tensor& initializer() const { return *initializer_; }
  void set_initializer(Tensor t) { initializer_ = std::move(t); }
  // Drops the stored tensor (the optimizer, for a constant nobody reads any more, to free its memory).
  void clear_initializer() { initializer_.reset(); }
  bool is_graph_input() const { return is_graph_input_; }
  // Nodes reading this value (one entry per input slot that reads it), in any graph of the tree
  // (subgraph nodes reading an outer value are listed on it). Kept up to date by Graph's mutators.
  const std::vector<Node*>& users() const { return users_; }

 private:
  friend class Graph;
  std::vector<Node*> users_;
  std::string name_;
  TypeInfo type_;
  Graph* owner_ = nullptr;
  int index_ = -1;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  bool is_graph_input_ = false;
  std::optional<Tensor> initializer_;
};

class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  // The opset version of this node's domain imported by the model.
  int opset() const { return opset_; }
  void set_opset(int v) { opset_ = v; }
  Graph* owner() const { return owner_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // nullptr for an omitted optional input/output.
  Value* input(int i) const { return i < num_inputs() ? inputs_[static_cast<size_t>(i)] : nullptr; }
  Value* output(int i) const { return i < num_outputs() ? outputs_[static_cast<size_t>(i)] : nullptr; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }

  const std::vector<Attribute>& attributes() const { return attrs_; }
  void add_attribute(Attribute a) { attrs_.push_back(std::move(a)); }
  const Attribute* attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t def) const;
  float attr_float(const std::string& name, float def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> def = {}) const;
  // All subgraph attributes (If branches, Loop/Scan bodies).
  std::vector<Graph*> subgraphs() const;

  // "'name' (OpType)" for error messages.
  std::string describe() const;
  // True once Graph::remove_node detached it (the object lives until Graph::collect_garbage()).
  bool removed() const { return removed_; }
  // Attribute mutation (optimizer): replaces an attribute of the same name or adds it.
  void set_attribute(Attribute a);
  void remove_attribute(const std::string& name);

 private:
  friend class Graph;
  bool removed_ = false;
  std::string name_, op_type_, domain_;
  int opset_ = 0;
  Graph* owner_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Attribute> attrs_;
};

class Graph {
 public:
  explicit Graph(std::string name, Graph* parent = nullptr) : name_(std::move(name)), parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  Graph* parent() const { return parent_; }
  void set_parent(Graph* p) { parent_ = p; }

  // Creates a value owned by this graph. Names must be unique within the graph.
  Value* add_value(const std::string& name, TypeInfo type = {});
  Value* add_input(const std::string& name, TypeInfo type);
  Value* add_initializer(const std::string& name, Tensor t);
  void add_output(Value* v) { outputs_.push_back(v); }
  // Adds a node reading `inputs` (nullptr = omitted) and creating values named `outputs` ("" = omitted).
  Node* add_node(const std::string& op_type, const std::string& domain, const std::string& name,
                 const std::vector<Value*>& inputs, const std::vector<std::string>& outputs);

  // --- Mutation (the optimizer's API). Users lists stay consistent through these. ---
  // A node whose outputs are existing values with no producer (e.g. the outputs of a node just
  // removed): a fused node takes over the values (and so the names) of the pattern it replaces.
  Node* add_node_with_outputs(const std::string& op_type, const std::string& domain, const std::string& name,
                              const std::vector<Value*>& inputs, const std::vector<Value*>& outputs);
  // Detaches n: its inputs lose it as a user, its outputs lose their producer. The node stays
  // allocated (removed() is true) until collect_garbage(), so iterations over snapshots stay valid.
  void remove_node(Node* n);
  void collect_garbage();
  // Moves n to just before `before` in nodes() (the execution order); the caller keeps the order
  // topological (n's inputs are defined before `before`).
  void move_node_before(Node* n, const Node* before);
  void set_input(Node* n, int i, Value* v);
  // Every node input reading `from` (in this graph and its subgraphs) reads `to` instead.
  // Graph outputs are not changed: outputs keep their names (see is_output).
  void replace_all_uses(Value* from, Value* to);
  bool is_output(const Value* v) const;
  void set_output(size_t i, Value* v) { outputs_[i] = v; }
  // A fresh initializer (not a graph input) with a name unique in this graph.
  Value* add_constant(const std::string& prefix, Tensor t);
  // A value name (or node name) not used yet in this graph: prefix, prefix_1, prefix_2, ...
  std::string unique_name(const std::string& prefix);

  // Finds a value by name in this graph only.
  Value* find_value(const std::string& name) const;
  // Finds a value by name here or in an enclosing graph.
  Value* resolve(const std::string& name) const;

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Value*> initializers() const;

  // Reorders nodes_ topologically (stable); fails on a cycle or an undefined input.
  Status sort_topologically();

 private:
  static void drop_user(Value* v, const Node* n);
  static void drop_uses(Node* n);

  std::string name_;
  Graph* parent_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> by_name_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Node>> removed_nodes_;
  int name_counter_ = 0;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

// A loaded model: the main graph plus the metadata that governs it.
struct Model {
  std::shared_ptr<Graph> graph;
  std::map<std::string, int> opsets;  // domain ("" = ai.onnx) -> version
  int64_t ir_version = 0;
  std::string producer;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::map<std::string, std::string> metadata;  // metadata_props
  std::string path;  // file it came from, "" for bytes
  // Some tensor's bytes were read from a file beside the model (ONNX external data): the model's own
  // bytes do not determine it (the disk plan cache does not keep such models).
  bool reads_external_files = false;
};

}  // namespace sdx::ir
