#include "runtime/graph_executor.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "backend/device.h"
#include "backend/kernel_registry.h"
#include "backend/loop_host.h"
#include "obs/observers.h"
#include "obs/op_timing_tracker.h"
#include "obs/test_slowdown.h"
#include "plan/plan.h"
#include "runtime/run_control.h"
#include "runtime/step_profile.h"

namespace sdx::runtime {

const Datum& Frame::lookup(const ir::Value* v) const {
  for (const Frame* f = this; f; f = f->parent)
    if (v->owner() == f->graph) return f->slots[static_cast<size_t>(v->index())];
  static const Datum kEmpty;
  return kEmpty;
}

namespace {

// Where a timed step's kernel spent its time asking for output buffers (detailed timing).
struct PhaseClock {
  uint64_t first_alloc = 0;  // when the first output buffer was requested (0: none)
  uint64_t alloc_ns = 0;     // inside allocate_output
};

// Also the Loop kernel's LoopHost: the session's loop monitor, through the executor running the step.
class InterpreterContext final : public backend::KernelContext, public backend::LoopHost {
 public:
  InterpreterContext(const ir::Node& node, Frame& frame, const GraphExecutor& exec, PhaseClock* clock = nullptr)
      : node_(node), frame_(frame), exec_(exec), clock_(clock) {}

  const ir::Node& node() const override { return node_; }
  analysis::LoopMonitor* loop_monitor() const override { return exec_.loop_monitor(); }
  int num_inputs() const override { return node_.num_inputs(); }
  bool has_input(int i) const override {
    const ir::Value* v = node_.input(i);
    return v && !frame_.lookup(v).is_empty();
  }
  const Tensor& input(int i) const override { return input_datum(i).as_tensor(); }
  const Datum& input_datum(int i) const override {
    static const Datum kEmpty;
    const ir::Value* v = node_.input(i);
    return v ? frame_.lookup(v) : kEmpty;
  }
  int num_outputs() const override { return node_.num_outputs(); }
  bool wants_output(int i) const override { return node_.output(i) != nullptr; }

  Result<Tensor> allocate_output(int i, DType dtype, const Shape& shape) override {
    if (clock_) [[unlikely]] {
      const uint64_t t0 = obs::now_ns();
      if (!clock_->first_alloc) clock_->first_alloc = t0;
      PhaseClock* c = clock_;
      clock_ = nullptr;
      Result<Tensor> r = allocate_output(i, dtype, shape);
      clock_ = c;
      clock_->alloc_ns += obs::now_ns() - t0;
      return r;
    }
    const ir::Value* v = node_.output(i);
    if (v && frame_.planned) {
      const Tensor& p = (*frame_.planned)[static_cast<size_t>(v->index())];
      if (p.defined() && p.dtype() == dtype && p.shape() == shape) {
        frame_.slots[static_cast<size_t>(v->index())] = Datum::tensor(p);
        return p;
      }
    }
    SDX_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape), where() + " output " + std::to_string(i));
    SDX_RETURN_IF_ERROR(set_output(i, t), "");
    return t;
  }
  Status set_output(int i, Tensor t) override { return set_output_datum(i, Datum::tensor(std::move(t))); }
  Status set_output_datum(int i, Datum d) override {
    if (i < 0) return internal_error(where() + ": kernel wrote output " + std::to_string(i));
    // Trailing optional outputs may be left off the node entirely; like omitted ones, they are dropped.
    const ir::Value* v = node_.output(i);
    if (!v) return Status::ok();
    if (frame_.planned && d.is_tensor()) {
      // A result made elsewhere (an If's branch) that has frozen memory of its exact type and shape goes
      // there, so that the steps reading it can be captured against that address.
      const Tensor& p = (*frame_.planned)[static_cast<size_t>(v->index())];
      const Tensor& t = d.as_tensor();
      if (p.defined() && p.raw_data() != t.raw_data() && p.dtype() == t.dtype() && p.shape() == t.shape() &&
          dtype_is_byte_addressable(p.dtype())) {
        if (p.nbytes()) std::memcpy(p.raw_data(), t.raw_data(), p.nbytes());
        d = Datum::tensor(p);
      }
    }
    frame_.slots[static_cast<size_t>(v->index())] = std::move(d);
    return Status::ok();
  }
  Result<std::vector<Datum>> run_subgraph(const ir::Graph& graph, std::vector<Datum> inputs) override {
    return exec_.run_subgraph(graph, frame_, std::move(inputs));
  }

 private:
  const ir::Node& node_;
  Frame& frame_;
  const GraphExecutor& exec_;
  PhaseClock* clock_;
};

}  // namespace

GraphExecutor::GraphExecutor() = default;
GraphExecutor::~GraphExecutor() = default;

Status GraphExecutor::prepare(const ir::Graph& graph, std::vector<const ir::Node*>* unsupported,
                              const plan::CompileOptions& options, SubgraphCompiler* bodies) {
  graph_ = &graph;
  SDX_ASSIGN_OR_RETURN(plan_, plan::compile(graph, graph.outputs(), options), "planning graph '" + graph.name() + "'");
  // Kernels for every node, live or not: plans for fewer outputs use subsets of them. Each node runs on
  // the first device, by priority, that supports it (backend/device.h), and takes that device's kernel.
  const backend::DeviceRegistry& devices = backend::DeviceRegistry::global();
  for (const auto& node : graph.nodes()) {
    const ir::Node* n = node.get();
    const backend::Device* device = devices.place(*n);
    if (!device) return internal_error("no device is registered (not even the CPU)");
    const backend::KernelDef* def = device->kernels().find(*n);
    NodeKernel& nk = kernels_[n];
    nk.device = device->kind();
    const bool onnx = n->domain().empty() || n->domain() == "ai.onnx";
    nk.names = {obs::intern_name(onnx ? n->op_type() : n->domain() + "." + n->op_type()), obs::intern_name(n->name())};
    if (!def) {
      unsupported->push_back(n);
    } else {
      SDX_ASSIGN_OR_RETURN(nk.kernel, def->create(*n), "");
    }
    for (const ir::Graph* sg : n->subgraphs()) {
      auto sub = std::make_unique<GraphExecutor>();
      const size_t missing = unsupported->size();
      SDX_RETURN_IF_ERROR(sub->prepare(*sg, unsupported), "subgraph '" + sg->name() + "' of " + n->describe());
      subgraphs_[sg] = std::move(sub);
      if (bodies && unsupported->size() == missing)
        if (std::unique_ptr<SubgraphBody> b = bodies->compile(*sg, *n)) bodies_[sg] = std::move(b);
    }
  }
  plan_.place_steps([&](const ir::Node& n) { return kernels_[&n].device; });
  return Status::ok();
}

void GraphExecutor::set_loop_monitor(std::shared_ptr<analysis::LoopMonitor> m) {
  for (auto& [graph, sub] : subgraphs_) sub->set_loop_monitor(m);
  loops_ = std::move(m);
}

const backend::Kernel* GraphExecutor::kernel(const ir::Node* node) const {
  auto it = kernels_.find(node);
  return it == kernels_.end() ? nullptr : it->second.kernel.get();
}

GraphExecutor::NodeNames GraphExecutor::names(const ir::Node* node) const {
  auto it = kernels_.find(node);
  return it == kernels_.end() ? NodeNames{} : it->second.names;
}

namespace {

// A kernel's run(), with running out of memory (a std::bad_alloc from a buffer it sizes from hostile
// attributes or shapes: a Conv pad of 2^32 asks for a window table of terabytes) turned into a clean
// error naming the node instead of an exception through the engine.
Status run_kernel(const backend::Kernel& k, backend::KernelContext& ctx) {
  try {
    return k.run(ctx);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("out of memory: its shapes or attributes ask for more memory than this machine "
                              "could allocate");
  }
}

}  // namespace

Status GraphExecutor::run_step_observed(const plan::Plan& plan, int step, Frame& frame) const {
  using obs::TimingPhase;
  obs::OpTiming rec;
  PhaseClock clock;
  const bool phases = (obs::observers() & obs::kObservePhases) != 0;
  const uint64_t t0 = obs::now_ns();
  const ir::Node& node = *plan.steps()[static_cast<size_t>(step)].node;
  auto it = kernels_.find(&node);
  const backend::Kernel* k = it == kernels_.end() ? nullptr : it->second.kernel.get();
  if (!k) return unimplemented(node.describe() + " has no kernel");
  const uint64_t t1 = phases ? obs::now_ns() : 0;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* v = node.input(i);
    if (v && frame.lookup(v).is_empty())
      return internal_error(node.describe() + ": input '" + v->name() + "' has no value (its producer did not set it)");
  }
  const uint64_t t2 = obs::now_ns();  // the kernel's start (also the slowdown hook's reference)
  InterpreterContext ctx(node, frame, *this, phases ? &clock : nullptr);
  Status s = run_kernel(*k, ctx);
  if constexpr (obs::kTestHooks)
    if (obs::observers() & obs::kObserveSlowdown) obs::apply_test_slowdown(it->second.names.op, obs::now_ns() - t2);
  const uint64_t t3 = obs::now_ns();
  rec.op = it->second.names.op;
  rec.node = it->second.names.node;
  rec.start_ns = t0;
  auto set = [&](TimingPhase p, uint64_t ns) { rec.phase_ns[static_cast<int>(p)] = obs::clamp_ns(ns); };
  set(TimingPhase::kTotal, t3 - t0);
  if (phases) {
    // The kernel validates its inputs and computes its output shapes before it asks for the first
    // output buffer: that stretch is SHAPE_CALC; the buffer requests are MEMORY_ALLOC; the rest runs
    // the kernel proper.
    const uint64_t shape_end = clock.first_alloc ? clock.first_alloc : t2;
    set(TimingPhase::kKernelSelect, t1 - t0);
    set(TimingPhase::kValidation, t2 - t1);
    set(TimingPhase::kShapeCalc, shape_end - t2);
    set(TimingPhase::kMemoryAlloc, clock.alloc_ns);
    set(TimingPhase::kKernelExec, t3 - shape_end - std::min(clock.alloc_ns, t3 - shape_end));
  }
  if (obs::observers() & obs::kObserveTiming) obs::OpTimingTracker::global().record(rec);
  if (obs::observers() & obs::kObserveEvents)
    emit_kernel_event(rec.op, rec.node, profile_step(node, frame), t0, t3 - t0);
  if (!s.is_ok()) return s.with_context(node.describe());
  return Status::ok();
}

Status GraphExecutor::run_step(const plan::Plan& plan, int step, Frame& frame) const {
  if (obs::observers()) [[unlikely]]
    return run_step_observed(plan, step, frame);
  const ir::Node& node = *plan.steps()[static_cast<size_t>(step)].node;
  const backend::Kernel* k = kernel(&node);
  if (!k) return unimplemented(node.describe() + " has no kernel");
  for (int i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* v = node.input(i);
    if (v && frame.lookup(v).is_empty())
      return internal_error(node.describe() + ": input '" + v->name() + "' has no value (its producer did not set it)");
  }
  InterpreterContext ctx(node, frame, *this);
  Status s = run_kernel(*k, ctx);
  if (!s.is_ok()) return s.with_context(node.describe());
  return Status::ok();
}

Status GraphExecutor::run(Frame& frame, const plan::Plan& plan) const {
  for (const auto& v : graph_->values())
    if (v->is_initializer() && frame.slots[static_cast<size_t>(v->index())].is_empty())
      frame.slots[static_cast<size_t>(v->index())] = Datum::tensor(v->initializer());
  const std::atomic<bool>* stop = current_terminate_flag();
  for (size_t step = 0; step < plan.steps().size(); ++step) {
    if (terminate_requested(stop)) [[unlikely]]
      return terminated_status();
    SDX_RETURN_IF_ERROR(run_step(plan, static_cast<int>(step), frame), "");
    if (frame.observer) frame.observer->on_step(static_cast<int>(step), *plan.steps()[step].node, frame);
    // The frame is indexed by value (outer-scope reads resolve by value).
    for (int slot : plan.release_at_step()[step])
      frame.slots[static_cast<size_t>(plan.slots()[static_cast<size_t>(slot)].value->index())] = Datum();
  }
  return Status::ok();
}

Result<std::vector<Datum>> GraphExecutor::run_subgraph(const ir::Graph& graph, const Frame& parent,
                                                       std::vector<Datum> inputs) const {
  auto it = subgraphs_.find(&graph);
  if (it == subgraphs_.end()) return internal_error("subgraph '" + graph.name() + "' was not prepared");
  if (inputs.size() != graph.inputs().size())
    return invalid_argument("subgraph '" + graph.name() + "' takes " + std::to_string(graph.inputs().size()) +
                            " inputs but was given " + std::to_string(inputs.size()));
  if (auto b = bodies_.find(&graph); b != bodies_.end()) {
    SDX_ASSIGN_OR_RETURN(std::optional<std::vector<Datum>> out, b->second->run(parent, inputs),
                         "subgraph '" + graph.name() + "'");
    if (out) return std::move(*out);
  }
  Frame frame(&graph, &parent);
  for (size_t i = 0; i < inputs.size(); ++i) frame.slots[static_cast<size_t>(graph.inputs()[i]->index())] = std::move(inputs[i]);
  SDX_RETURN_IF_ERROR(it->second->run(frame), "subgraph '" + graph.name() + "'");
  std::vector<Datum> out;
  out.reserve(graph.outputs().size());
  for (const ir::Value* v : graph.outputs()) out.push_back(frame.lookup(v));
  return out;
}

}  // namespace sdx::runtime
