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
#include <optional>
#include <unordered_map>
#include <vector>

#include "backend/kernel.h"
#include "core/datum.h"
#include "ir/graph.h"
#include "plan/plan.h"

namespace sdx::analysis {
class LoopMonitor;
}

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

// A subgraph body compiled to run on its own (runtime/body_session.h: the body lifted to a model with
// its own optimized, frozen and captured plans). GraphExecutor::run_subgraph hands it the body's inputs
// and the frame that outer-scope reads resolve in; it returns the body's outputs (owned by the caller),
// or nullopt when it declines this call (the executor then interprets the body).
class SubgraphBody {
 public:
  virtual ~SubgraphBody() = default;
  virtual Result<std::optional<std::vector<Datum>>> run(const Frame& parent, std::vector<Datum>& inputs) const = 0;
};

// Compiles subgraph bodies for GraphExecutor::prepare. A null result (or an error, which it records for
// the diagnostics) leaves the body interpreted.
class SubgraphCompiler {
 public:
  virtual ~SubgraphCompiler() = default;
  virtual std::unique_ptr<SubgraphBody> compile(const ir::Graph& body, const ir::Node& owner) = 0;
};

class GraphExecutor {
 public:
  GraphExecutor();
  ~GraphExecutor();
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  // Creates kernels for every node (recursively for subgraphs). Collects every
  // unsupported node into `unsupported` instead of failing at the first.
  // `options` apply to this graph's plan (subgraphs get the defaults). `bodies`, when given, compiles
  // this graph's direct subgraphs to run on their own; every subgraph is also prepared to be interpreted
  // (the fallback, and the check that all its nodes have kernels).
  Status prepare(const ir::Graph& graph, std::vector<const ir::Node*>* unsupported,
                 const plan::CompileOptions& options = {}, SubgraphCompiler* bodies = nullptr);

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
  // The session's loop policy and report log (analysis/loop_monitor.h), lent to the Loop kernels of this
  // graph and of every interpreted subgraph (backend/loop_host.h). Set after prepare(), before any run.
  void set_loop_monitor(std::shared_ptr<analysis::LoopMonitor> m);
  analysis::LoopMonitor* loop_monitor() const { return loops_.get(); }
  // The plan this executor runs (steps are in this plan's order).
  const plan::Plan& plan() const { return plan_; }

 private:
  const ir::Graph* graph_ = nullptr;
  plan::Plan plan_;
  std::shared_ptr<backend::PackedWeights> packed_weights_;
  std::shared_ptr<analysis::LoopMonitor> loops_;
  struct NodeKernel {
    std::unique_ptr<backend::Kernel> kernel;  // null when unsupported
    NodeNames names;
    DeviceKind device = DeviceKind::kCpu;  // the device it was placed on
  };
  std::unordered_map<const ir::Node*, NodeKernel> kernels_;
  // run_step with an observer on (op timing, events, the test slowdown hook).
  Status run_step_observed(const plan::Plan& plan, int step, Frame& frame) const;
  std::unordered_map<const ir::Graph*, std::unique_ptr<GraphExecutor>> subgraphs_;
  std::unordered_map<const ir::Graph*, std::unique_ptr<SubgraphBody>> bodies_;  // compiled ones
};

}  // namespace sdx::runtime
