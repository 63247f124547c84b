// GraphExecutor: runs one ir::Graph slot by slot (topological order), freeing
// each intermediate after its last use. Subgraphs (If/Loop/Scan bodies) get
// their own GraphExecutor and run in a child Frame that can read the parent's
// values (outer scope).
//
//   GraphExecutor exec;  SDX_RETURN_IF_ERROR(exec.prepare(graph), "");
//   Frame frame(&graph, nullptr);  bind inputs...;  SDX_RETURN_IF_ERROR(exec.run(frame), "");
//
// A prepared GraphExecutor is immutable and may run concurrently in many frames.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/kernel.h"
#include "core/datum.h"
#include "ir/graph.h"
#include "plan/plan.h"

namespace sdx::runtime {

struct Frame;

// Sees every step of a top-level run right after its kernel ran, before
// intermediates are released (used by warmup to record shapes).
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void on_step(int step, const ir::Node& node, const Frame& frame) = 0;
};

// Run-time storage for one execution of one graph: one slot per ir::Value.
struct Frame {
  Frame(const ir::Graph* g, const Frame* p) : graph(g), parent(p), slots(g->values().size()) {}
  const ir::Graph* graph;
  const Frame* parent;
  std::vector<Datum> slots;
  StepObserver* observer = nullptr;  // not inherited by subgraph frames
  // Memory frozen for this input-shape signature, by value index (top-level frame only):
  // a kernel asking for an output of exactly this type and shape gets this tensor.
  const std::vector<Tensor>* planned = nullptr;

  // The slot holding v, searching enclosing frames for outer-scope values.
  const Datum& lookup(const ir::Value* v) const;
};

class GraphExecutor {
 public:
  // Creates kernels for every node (recursively for subgraphs). Collects every
  // unsupported node into `unsupported` instead of failing at the first.
  // `options` apply to this graph's plan (subgraphs get the defaults).
  Status prepare(const ir::Graph& graph, std::vector<const ir::Node*>* unsupported,
                 const plan::CompileOptions& options = {});

  // Binds initializers, then runs all nodes. Graph inputs must already be in frame.slots.
  Status run(Frame& frame) const { return run(frame, plan_); }
  // Same, following another plan of this graph (one compiled for fewer outputs).
  Status run(Frame& frame, const plan::Plan& plan) const;
  // Runs one step of `plan` in `frame` (no initializer binding, no releases).
  Status run_step(const plan::Plan& plan, int step, Frame& frame) const;
  // The kernel of a node of this graph (null when unsupported).
  const backend::Kernel* kernel(const ir::Node* node) const;
  // The node's op type and name, interned for the op timing tracker and the event stream.
  struct NodeNames {
    const char* op = "";
    const char* node = "";
  };
  NodeNames names(const ir::Node* node) const;

  // Runs a subgraph prepared by this executor tree with positional inputs.
  Result<std::vector<Datum>> run_subgraph(const ir::Graph& graph, const Frame& parent, std::vector<Datum> inputs) const;

  const ir::Graph* graph() const { return graph_; }
  // Packed weights kernels find or record when they bind (backend/packed_weights.h); null by default.
  backend::PackedWeights* packed_weights() const { return packed_weights_.get(); }
  void set_packed_weights(std::shared_ptr<backend::PackedWeights> p) { packed_weights_ = std::move(p); }
  // The plan this executor runs (steps are in this plan's order).
  const plan::Plan& plan() const { return plan_; }

 private:
  const ir::Graph* graph_ = nullptr;
  plan::Plan plan_;
  std::shared_ptr<backend::PackedWeights> packed_weights_;
  struct NodeKernel {
    std::unique_ptr<backend::Kernel> kernel;  // null when unsupported
    NodeNames names;
    DeviceKind device = DeviceKind::kCpu;  // the device it was placed on
  };
  std::unordered_map<const ir::Node*, NodeKernel> kernels_;
  // run_step with an observer on (op timing, events, the test slowdown hook).
  Status run_step_observed(const plan::Plan& plan, int step, Frame& frame) const;
  std::unordered_map<const ir::Graph*, std::unique_ptr<GraphExecutor>> subgraphs_;
};

}  // namespace sdx::runtime
