// Session: a loaded, verified model ready to run. Immutable after load; run()
// may be called from many threads at once.
//
//   SDX_ASSIGN_OR_RETURN(auto session, api::load_session_file("model.onnx"), "");   // api/load.h
//   std::vector<std::pair<std::string, Datum>> feeds = {{"x", Datum::tensor(x)}};
//   SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs, session->run(feeds, {"y"}), "");
//
// The positional path on a caller-owned Context is the fast one: once the plan is
// captured it replays with no allocation at all.
//
//   std::unique_ptr<Context> ctx = session->create_context();
//   const int64_t dims[] = {1, 16};
//   TensorArg x{DType::kFloat32, dims, 2, data};
//   ExecutionReport rep;
//   SDX_RETURN_IF_ERROR(session->run(*ctx, &x, 1, {}, &rep), "");
//   const Tensor& y = ctx->output(0).as_tensor();   // valid until the next run on ctx
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/threading/thread_pool.h"
#include "core/datum.h"
#include "core/status.h"
#include "ir/graph.h"
#include "opt/pass_manager.h"
#include "runtime/body_report.h"
#include "runtime/context.h"
#include "runtime/context_pool.h"
#include "runtime/execution_report.h"
#include "runtime/executor.h"
#include "runtime/graph_executor.h"
#include "runtime/input_check.h"
#include "runtime/plan_cache.h"
#include "runtime/row_proof.h"
#include "runtime/session_options.h"
#include "runtime/shape_buckets.h"
#include "runtime/shape_variety.h"
#include "runtime/tensor_arg.h"
#include "runtime/value_info.h"

namespace sdx::jit {
class JitEngine;
struct JitStats;
}

namespace sdx::runtime {

class Session {
 public:
  // Takes a model (from api/load.h's ONNX loading, the C++ graph builder, tests).
  // optimized: model.graph is the graph optimizer's output already (a bundle's), so the optimizer does
  // not run on it again; subgraph bodies, which it does not enter, still get options.optimizer.
  static Result<std::unique_ptr<Session>> create(ir::Model model, SessionOptions options = {}, bool optimized = false);
  // A subgraph body lifted to a model (runtime/body_session.h): `options` are taken as they are (no
  // environment overlay), and calls run on the caller's intra-op pool instead of one of its own. Its loops
  // report to `loops`, the parent's monitor (null: one of its own).
  static Result<std::unique_ptr<Session>> create_body(ir::Model model, SessionOptions options,
                                                      std::shared_ptr<analysis::LoopMonitor> loops = nullptr);
  ~Session();

  // Graph inputs that are not initializers, in declaration order.
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  const ir::Model& model() const { return model_; }
  const SessionOptions& options() const { return options_; }
  // The execution mode asked for, the one this session runs (down the fallback chain), and why they differ.
  const ModeResolution& execution_mode() const { return executor_->mode(); }
  // The plan the session runs (all graph outputs requested).
  const plan::Plan& plan() const { return graph_executor_.plan(); }

  // Runs the model. Empty output_names = all outputs. Inputs are checked by name,
  // element type, rank and fixed dims; errors name the input and what was expected.
  // `observer`, when given, sees every top-level step (warmup shape recording, introspection).
  Result<std::vector<Datum>> run(const std::vector<std::pair<std::string, Datum>>& feeds,
                                 const std::vector<std::string>& output_names = {},
                                 StepObserver* observer = nullptr, ExecutionReport* report = nullptr) const;

  // Runs on one Datum per inputs() entry, in order (a subgraph body's call): plain tensors take the
  // planned path on a pooled context, anything else runs slot by slot. All outputs, owned by the caller.
  Result<std::vector<Datum>> run_inputs(const std::vector<const Datum*>& by_input, ExecutionReport* report = nullptr) const;

  // A context for the positional path; it must not outlive the session and serves one
  // call at a time. The first one is the context bind_seeded_plans bound, when it did.
  std::unique_ptr<Context> create_context() const;
  // Positional run: one TensorArg per inputs() entry, in order. `outputs` are positions in
  // outputs() (empty = all). Results stay in ctx (ctx.output(i)) until its next run.
  Status run(Context& ctx, const TensorArg* inputs, size_t num_inputs, const std::vector<int>& outputs = {},
             ExecutionReport* report = nullptr) const;
  // Freezes the shapes of ctx's current plan now instead of after the configured warmup
  // runs (sdxFreezeShapes). Needs one warmup run with the shapes to freeze.
  Status freeze_shapes(Context& ctx) const;
  // Overrides an initializer for runs on ctx (sdxMarkInputVariable); the tensor is copied.
  // A new element type or shape drops ctx's plans. Constants the optimizer folded, merged or
  // fused away are refused (failed_precondition): declare them graph inputs to keep them variable.
  Status set_variable(Context& ctx, const std::string& name, const Tensor& value) const;
  // A warmup record for the plan of every output at input signature `sig` (from a bundle, api/bundle.h):
  // a context's first call with that signature freezes from it instead of warming up. Call before the
  // session serves any call.
  void seed_plan(ShapeSignature sig, std::vector<plan::RecordedSlot> record);
  // Freezes and binds the plan of every output for each seeded signature on a new context, running no
  // step, so that context's first call replays; the first create_context() (or pooled run) gets it. A
  // bundle's loader calls it while it verifies the file's checksum (api/bundle.cc).
  Status bind_seeded_plans();
  // The warmup records seed_plan gave it, by input signature.
  const std::vector<std::pair<ShapeSignature, std::vector<plan::RecordedSlot>>>& seeded_plans() const { return seeded_; }
  // Packed weights that kernels find (a bundle's) or record (compiling one) when they bind
  // (backend/packed_weights.h). Call before the session serves any call.
  void set_packed_weights(std::shared_ptr<backend::PackedWeights> packed) {
    graph_executor_.set_packed_weights(std::move(packed));
  }
  backend::PackedWeights* packed_weights() const { return graph_executor_.packed_weights(); }
  // Called on the calling thread each time a context freezes and captures a plan, with its entry (its
  // signature and warmup record): the disk plan cache (api/plan_disk_cache.h) persists plans from it.
  // Set before the session serves any call; it must not call back into the session.
  void set_on_plan_captured(std::function<void(const PlanEntry&)> f) { on_captured_ = std::move(f); }
  // Position of an input/output by name, or -1.
  int input_index(const std::string& name) const;
  int output_index(const std::string& name) const;
  PlanCacheStats cache_stats() const { return cache_->stats(); }
  // What the graph optimizer did at load (rewrites per pass, op histograms before and after).
  const opt::OptimizationReport& optimization() const { return optimization_; }
  // The kernel JIT (null when options().jit.enabled is false or the mode is SLOT_BY_SLOT).
  jit::JitEngine* jit() const { return jit_.get(); }
  // The intra-op pool (null with one thread), for callers that copy results out with it
  // (cpu::ScopedThreadPool + cpu::parallel_copy).
  cpu::ThreadPool* thread_pool() const { return threads_.get(); }
  // Waits until the JIT has no compile in flight (true) or timeout_s passed (false); true without a JIT.
  bool wait_for_jit(double timeout_s) const;
  // The loop policy of options().loops and the reports of this session's Loop nodes, nested ones included
  // (analysis/loop_monitor.h). Never null.
  analysis::LoopMonitor& loops() const { return *loops_; }
  // Subgraph bodies (of this graph, not nested ones) left interpreted at load, one line each with why.
  const std::vector<std::string>& interpreted_bodies() const { return interpreted_bodies_; }
  // Every subgraph body of this graph as it stands now (plan or interpreted, calls, replays), each with
  // the bodies nested in it; empty with subgraph_plans off.
  std::vector<BodyReport> body_reports() const;
  // The shape buckets (options().shape_buckets; runtime/shape_buckets.h), or null without them.
  // Acquire: pairs with the release store that publishes automatic buckets (session_buckets.cc).
  const ShapeBuckets* shape_buckets() const { return active_buckets_.load(std::memory_order_acquire); }
  // Per symbolic input dim: "" when padding it is proven exact (independent rows), else why not
  // (analysis/row_padding.h). Without a shape_buckets option, dims proven so that vary across calls switch to
  // automatic buckets (SessionOptions::auto_shape_buckets; session_buckets.cc).
  const std::map<std::string, std::string>& row_dims() const { return rows_.dims; }
  const RowProof& row_proof() const { return rows_; }
  // The proof made before the optimizer, for a session created from an optimized graph (a bundle's: its
  // manifest keeps it). Before the first call.
  void adopt_row_proof(RowProof proof) { rows_ = std::move(proof); }

 private:
  Session() = default;
  Status init();
  // The entry for this call's key: ctx's last one when it matches (no hashing), else found or created.
  PlanEntry& entry_for(Context& ctx, const TensorArg* inputs, const std::vector<int>& outputs) const;
  std::shared_ptr<const plan::Plan> plan_for(const std::vector<int>& outputs) const;
  // run(feeds) when every input is a plain tensor: padded to the shape buckets (shape_buckets.h) when the
  // session has them, then run_planned.
  Result<std::vector<Datum>> run_pooled(const std::vector<const Datum*>& by_input, const std::vector<int>& outputs,
                                        ExecutionReport* report) const;
  // The positional path on a pooled context; with `padded` (the call's shape-bucket padding), the outputs
  // come back sliced to the shapes given.
  Result<std::vector<Datum>> run_planned(const std::vector<const Datum*>& by_input, const std::vector<int>& outputs,
                                         ExecutionReport* report, const ShapeBuckets::Call* padded = nullptr) const;
  // run(feeds) otherwise: slot by slot in a fresh frame.
  Result<std::vector<Datum>> run_unplanned(const BoundFeeds& feeds, const std::vector<int>& outputs,
                                           StepObserver* observer, ExecutionReport* report) const;
  // The pool calls bind: the session's own, or for a body the caller's.
  cpu::ThreadPool* pool() const { return body_ ? cpu::current_thread_pool() : threads_.get(); }
  // Waves when inter-op parallelism is on.
  plan::CompileOptions compile_options() const { return {.waves = options_.inter_op_num_threads > 1}; }


  ir::Model model_;
  SessionOptions options_;
  bool body_ = false;       // a subgraph body's session (create_body)
  bool optimized_ = false;  // the graph came optimized (create)
  std::vector<std::string> interpreted_bodies_;
  std::vector<std::function<BodyReport()>> body_reporters_;  // BodySessionCompiler::reporters()
  std::vector<ValueInfo> inputs_, outputs_;
  std::vector<const ir::Value*> input_values_;  // parallel to inputs_
  GraphExecutor graph_executor_;
  std::shared_ptr<analysis::LoopMonitor> loops_;  // shared with body sessions and the executors
  opt::OptimizationReport optimization_;
  // Initializers set_variable may override: graph inputs, and constants whose readers the optimizer
  // left exactly as they were (it may have read, folded or merged the others).
  std::unordered_set<const ir::Value*> overridable_;
  // The row proof (compile_model.h, or a bundle's: adopt_row_proof); immutable once calls begin. Declared
  // before on_captured_: the disk cache's writer, which it holds, reads it until the writer is destroyed.
  RowProof rows_;
  std::vector<int> all_outputs_;  // 0..outputs()-1
  // Warmup records from a bundle (seed_plan), by input signature; immutable once calls begin.
  std::vector<std::pair<ShapeSignature, std::vector<plan::RecordedSlot>>> seeded_;
  std::shared_ptr<const plan::Plan> full_plan_;
  std::function<void(const PlanEntry&)> on_captured_;
  // Plans for other requested-output sets, compiled on first use.
  mutable std::mutex plans_mutex_;
  mutable std::vector<std::pair<std::vector<int>, std::shared_ptr<const plan::Plan>>> subset_plans_;
  // The kernel JIT: compiles fused segments on its own thread (joined, its compiler child killed,
  // when the session is destroyed). Plans keep their compiled kernels alive on their own.
  std::unique_ptr<jit::JitEngine> jit_;
  std::unique_ptr<PlanCache> cache_;
  // The intra-op pool (intra_op_num_threads); null with one thread. Bound to the calling thread for
  // the duration of each run, so kernels reach it through cpu::parallel_for.
  std::unique_ptr<cpu::ThreadPool> threads_;
  // The plan lifecycle (warmup, freeze, capture, replay, fallbacks, reports) of every entry.
  std::unique_ptr<Executor> executor_;
  // Idle per-caller contexts for the Datum run (declared after cache_: destroyed before it, since a
  // context gives its plans back to the cache).
  mutable ContextPool pool_{this};
  // The context bind_seeded_plans bound, until create_context hands it out (deleted by ~Session, before
  // cache_). Release store when bound, acquire exchange when taken: publishes its plans and memory.
  mutable std::atomic<Context*> bound_{nullptr};
  // Symbolic dims padded up to buckets on the feeds path (options_.shape_buckets); null without them.
  std::unique_ptr<ShapeBuckets> buckets_;
  // Automatic buckets (session_buckets.cc): the executor's hook, the buckets switched on (made once, under
  // auto_mu_, kept for the session's life) and the buckets in use: buckets_ or auto_buckets_, published with
  // release once made, read with acquire by every call.
  std::function<std::string(const ShapeVariety::Varied&)> on_shapes_vary_;
  mutable std::mutex auto_mu_;
  mutable std::unique_ptr<ShapeBuckets> auto_buckets_;
  mutable std::atomic<ShapeBuckets*> active_buckets_{nullptr};
  // Switches the proven dims among `dims` to automatic buckets; returns what it did and why not for the rest.
  std::string switch_to_buckets(const ShapeVariety::Varied& varied) const;
  // The most sizes automatic buckets keep per dim: half the plans the cache keeps (8..32).
  int auto_bucket_count() const;
};

}  // namespace sdx::runtime
