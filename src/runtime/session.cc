#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "analysis/loop_monitor.h"
#include "backend/cpu/jit/jit_engine.h"
#include "obs/diagnostics.h"
#include "obs/log.h"
#include "runtime/body_session.h"
#include "runtime/compile_model.h"

namespace sdx::runtime {

Result<std::unique_ptr<Session>> Session::create(ir::Model model, SessionOptions options, bool optimized) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::move(model);
  s->optimized_ = optimized;
  SDX_ASSIGN_OR_RETURN(s->options_, SessionOptions::from_env(options), "session options");
  SDX_RETURN_IF_ERROR(s->init(), "");
  return s;
}

Result<std::unique_ptr<Session>> Session::create_body(ir::Model model, SessionOptions options,
                                                     std::shared_ptr<analysis::LoopMonitor> loops) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::move(model);
  s->options_ = std::move(options);
  s->loops_ = std::move(loops);
  s->body_ = true;
  SDX_RETURN_IF_ERROR(s->init(), "");
  return s;
}

Session::~Session() { delete bound_.exchange(nullptr, std::memory_order_acquire); }

bool Session::wait_for_jit(double timeout_s) const { return jit_ ? jit_->wait_idle(timeout_s) : true; }

std::vector<BodyReport> Session::body_reports() const {
  std::vector<BodyReport> out;
  for (const auto& report : body_reporters_) out.push_back(report());
  return out;
}

Status Session::init() {
  if (!model_.graph) return invalid_argument("model has no graph");
  const ModeResolution mode = resolve_execution_mode(options_.execution_mode);
  if (!mode.reason.empty()) {
    // Asked for a mode this machine cannot run: say so once per session (the report carries it on every call).
    obs::log_for(options_.log_level, obs::LogSeverity::kWarning, "session", [&] { return "execution mode " + mode.reason; });
    obs::Diagnostics::global().record_lazy(obs::DiagCategory::kFallback, obs::DiagLevel::kSummary, "MODE_FALLBACK",
                                           [&] { return mode.reason; });
  }
  opt::OptimizerOptions optimizer = options_.optimizer;
  if (optimized_) optimizer.enabled = false;
  // An optimized graph's row proof is its bundle's (adopt_row_proof): fused ops have no row rules.
  SDX_ASSIGN_OR_RETURN(CompiledModel compiled, compile_model(model_, optimizer, /*prove_rows=*/!optimized_), "");
  optimization_ = std::move(compiled.optimization);
  optimization_.preoptimized = optimized_;
  overridable_ = std::move(compiled.overridable);
  rows_ = std::move(compiled.rows);
  std::vector<const ir::Node*> unsupported;
  if (!loops_) loops_ = std::make_shared<analysis::LoopMonitor>(options_.loops);
  BodySessionCompiler bodies(model_, options_, loops_);
  SDX_RETURN_IF_ERROR(graph_executor_.prepare(*model_.graph, &unsupported, compile_options(),
                                              options_.subgraph_plans ? &bodies : nullptr),
                      "");
  graph_executor_.set_loop_monitor(loops_);
  if (!unsupported.empty()) return unimplemented(describe_unsupported(unsupported));
  // An override of an initializer a body copied in as a constant would not reach the body.
  for (const ir::Value* v : bodies.captured_constants()) overridable_.erase(v);
  interpreted_bodies_ = bodies.interpreted();
  body_reporters_ = bodies.reporters();
  for (const ir::Value* v : model_.graph->inputs())
    if (!v->is_initializer()) {
      inputs_.push_back({v->name(), v->type()});
      input_values_.push_back(v);
    }
  for (const ir::Value* v : model_.graph->outputs()) {
    all_outputs_.push_back(static_cast<int>(outputs_.size()));
    outputs_.push_back({v->name(), v->type()});
  }
  if (!body_) {
    SDX_ASSIGN_OR_RETURN(buckets_, ShapeBuckets::create(options_.shape_buckets, inputs_, outputs_), "");
    active_buckets_.store(buckets_.get(), std::memory_order_release);  // before any call: nothing to publish yet
    if (!buckets_)
      on_shapes_vary_ = [this](const ShapeVariety::Varied& v) { return switch_to_buckets(v); };
  }
  // The executor's own plan computes every output; it lives as long as the session.
  full_plan_ = std::shared_ptr<const plan::Plan>(std::shared_ptr<void>(), &graph_executor_.plan());
  cache_ = std::make_unique<PlanCache>(options_.plan_cache_max_count, options_.plan_cache_budget_bytes());
  const int threads = std::max(options_.inter_op_num_threads, options_.intra_op_num_threads > 0
                                                                   ? options_.intra_op_num_threads
                                                                   : cpu::ThreadPool::default_num_threads());
  if (threads > 1 && !body_) threads_ = std::make_unique<cpu::ThreadPool>(threads);
  if (options_.jit.enabled && mode.used != ExecutionMode::kSlotBySlot)
    jit_ = std::make_unique<jit::JitEngine>(options_.jit);
  executor_ = std::make_unique<Executor>(Executor::Config{.graph = model_.graph.get(),
                                                          .graph_executor = &graph_executor_,
                                                          .inputs = &inputs_,
                                                          .input_values = &input_values_,
                                                          .mode = mode,
                                                          .warmup_runs = options_.warmup_runs,
                                                          .cache = cache_.get(),
                                                          .jit = jit_.get(),
                                                          .threads = threads_.get(),
                                                          .optimization = &optimization_,
                                                          .on_captured = &on_captured_,
                                                          .shape_buckets = buckets_ != nullptr,
                                                          .on_shapes_vary = on_shapes_vary_ ? &on_shapes_vary_ : nullptr,
                                                          .act_on_pressure = options_.auto_shape_buckets});
  obs::log_for(options_.log_level, obs::LogSeverity::kVerbose, "session", [&] {
    return "graph '" + model_.graph->name() + "': " + std::to_string(optimization_.nodes_after) + " nodes (" +
           std::to_string(optimization_.nodes_before) + " before the optimizer), " + std::to_string(inputs_.size()) +
           " inputs, " + std::to_string(outputs_.size()) + " outputs, mode " + execution_mode_name(mode.used) + ", " +
           std::to_string(threads) + " threads";
  });
  return Status::ok();
}

int Session::input_index(const std::string& name) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].name == name) return static_cast<int>(i);
  return -1;
}

int Session::output_index(const std::string& name) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::unique_ptr<Context> Session::create_context() const {
  // Acquire: sees the plans and frozen memory bind_seeded_plans wrote into the context.
  if (Context* bound = bound_.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<Context>(bound);
  return std::unique_ptr<Context>(new Context(cache_.get()));
}

std::shared_ptr<const plan::Plan> Session::plan_for(const std::vector<int>& outputs) const {
  if (outputs == all_outputs_) return full_plan_;
  std::lock_guard<std::mutex> lock(plans_mutex_);
  for (const auto& [outs, p] : subset_plans_)
    if (outs == outputs) return p;
  std::vector<ir::Value*> values;
  for (int o : outputs) values.push_back(model_.graph->outputs()[static_cast<size_t>(o)]);
  auto compiled = plan::compile(*model_.graph, values, compile_options());
  if (!compiled.is_ok()) return full_plan_;  // cannot happen for graph outputs; the full plan is always right
  auto p = std::make_shared<const plan::Plan>(std::move(compiled).value());
  subset_plans_.emplace_back(outputs, p);
  return p;
}

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

bool signature_matches(const ShapeSignature& sig, const TensorArg* args, size_t n) {
  if (sig.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    const auto& [dt, shape] = sig[i];
    if (dt != args[i].dtype || shape.rank() != args[i].rank) return false;
    for (int d = 0; d < args[i].rank; ++d)
      if (shape[d] != args[i].dims[d]) return false;
  }
  return true;
}

}  // namespace

PlanEntry& Session::entry_for(Context& ctx, const TensorArg* args, const std::vector<int>& outputs) const {
  // The fast path: the caller's previous plan, compared field by field (no hashing, no search).
  PlanEntry* last = ctx.last_;
  if (last && last->mode == executor_->mode().used && last->outputs == outputs &&
      signature_matches(last->signature, args, inputs_.size()))
    return *last;
  // key = hash(output set, input-shape content, placeholder count, execution mode)
  uint64_t h = mix(0, outputs.size());
  for (int o : outputs) h = mix(h, static_cast<uint64_t>(o));
  ShapeSignature sig;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    std::vector<int64_t> dims(args[i].dims, args[i].dims + args[i].rank);
    h = mix(h, static_cast<uint64_t>(args[i].dtype));
    h = mix(h, static_cast<uint64_t>(args[i].rank));
    for (int64_t d : dims) h = mix(h, static_cast<uint64_t>(d));
    sig.emplace_back(args[i].dtype, Shape(std::move(dims)));
  }
  h = mix(h, inputs_.size());
  h = mix(h, static_cast<uint64_t>(executor_->mode().used));
  PlanEntry& e = ctx.entry_for(outputs, sig, executor_->mode().used, h, plan_for(outputs));
  if (outputs == all_outputs_ && e.calls() == 0)
    for (const auto& [seed_sig, record] : seeded_)
      if (seed_sig == e.signature) e.seed(record);  // the executor freezes from it on this call, no warmup run
  ctx.last_ = &e;
  return e;
}

void Session::seed_plan(ShapeSignature sig, std::vector<plan::RecordedSlot> record) {
  seeded_.emplace_back(std::move(sig), std::move(record));
}

Status Session::bind_seeded_plans() {
  if (seeded_.empty() || executor_->mode().used == ExecutionMode::kSlotBySlot) return Status::ok();
  // The pool a call would bind under: kernels shape their work (and packed layouts) by its thread count.
  cpu::ScopedThreadPool bind_threads(pool());
  std::unique_ptr<Context> ctx(new Context(cache_.get()));
  for (const auto& [sig, record] : seeded_) {
    std::vector<TensorArg> args;  // the signature only: nothing runs, and the first replay copies the inputs
    for (const auto& [dtype, shape] : sig) args.push_back({dtype, shape.dims().data(), shape.rank(), nullptr});
    PlanEntry& e = entry_for(*ctx, args.data(), all_outputs_);
    SDX_RETURN_IF_ERROR(executor_->freeze_recorded(*ctx, e, args.data(), all_outputs_, /*at_load=*/true), "");
  }
  // Release: publishes the context's plans and frozen memory to the create_context that takes it.
  delete bound_.exchange(ctx.release(), std::memory_order_release);
  return Status::ok();
}

Status Session::freeze_shapes(Context& ctx) const {
  ctx.reclaim();
  PlanEntry* e = ctx.last_;
  if (!e) return failed_precondition("freeze_shapes: no run on this context yet; shapes are learned by a warmup run");
  if (e->phase() != PlanPhase::kWarmup) return Status::ok();
  if (e->warmup_runs() == 0 && e->shapes().empty())
    return failed_precondition("freeze_shapes: the current plan has not completed a warmup run");
  return executor_->freeze(ctx, *e);
}

Status Session::set_variable(Context& ctx, const std::string& name, const Tensor& value) const {
  const ir::Value* v = model_.graph->find_value(name);
  if (!v || !v->is_initializer())
    return invalid_argument("'" + name + "' is not an initializer of the model, so it cannot be set as a variable");
  if (!overridable_.count(v))
    return failed_precondition("'" + name + "' is a constant the graph optimizer folded, merged or fused into other "
                               "ops, so it cannot be set as a variable; declare it a graph input (an overridable "
                               "initializer) or load with SDX_OPTIMIZER_ENABLED=0");
  const Tensor& init = v->initializer();
  if (value.dtype() != init.dtype())
    return invalid_argument("variable '" + name + "': expected element type " + dtype_name(init.dtype()) + " but got " +
                            dtype_name(value.dtype()));
  for (auto& [idx, t] : ctx.variables_) {
    if (idx != v->index()) continue;
    if (t.shape() == value.shape() && dtype_is_byte_addressable(t.dtype())) {
      // Same type and shape: new values at the same address, so captured plans stay valid.
      if (t.nbytes()) std::memcpy(t.raw_data(), value.raw_data(), t.nbytes());
      return Status::ok();
    }
    SDX_ASSIGN_OR_RETURN(t, value.clone(), "variable '" + name + "'");
    while (!ctx.entries_.empty()) ctx.drop(ctx.entries_.size() - 1);
    return Status::ok();
  }
  SDX_ASSIGN_OR_RETURN(Tensor copy, value.clone(), "variable '" + name + "'");
  ctx.variables_.emplace_back(v->index(), std::move(copy));
  // Plans captured before may have read the initializer's values at prepare time.
  while (!ctx.entries_.empty()) ctx.drop(ctx.entries_.size() - 1);
  return Status::ok();
}

Status Session::run(Context& ctx, const TensorArg* args, size_t num_inputs, const std::vector<int>& requested,
                    ExecutionReport* report) const {
  const auto t0 = std::chrono::steady_clock::now();
  cpu::ScopedThreadPool bind_threads(pool());
  if (num_inputs != inputs_.size())
    return invalid_argument("the model takes " + std::to_string(inputs_.size()) + " inputs but " +
                            std::to_string(num_inputs) + " were given");
  for (size_t i = 0; i < num_inputs; ++i) SDX_RETURN_IF_ERROR(check_input(inputs_[i], args[i]), "");
  const std::vector<int>& outputs = requested.empty() ? all_outputs_ : requested;
  for (int o : outputs)
    if (o < 0 || o >= static_cast<int>(outputs_.size()))
      return invalid_argument("output position " + std::to_string(o) + " is out of range: the model has " +
                              std::to_string(outputs_.size()) + " outputs");
  ctx.reclaim();
  if (executor_->mode().used == ExecutionMode::kSlotBySlot)
    return executor_->run_slot_by_slot(ctx, *plan_for(outputs), args, outputs, report);
  return executor_->run(ctx, entry_for(ctx, args, outputs), args, outputs, t0, report);
}

}  // namespace sdx::runtime
