#include "runtime/executor.h"

#include <algorithm>
#include <chrono>

#include "backend/cpu/threading/thread_pool.h"
#include "backend/cpu/jit/jit_engine.h"
#include "obs/diagnostics.h"
#include "plan/memory_layout.h"
#include "runtime/context.h"
#include "runtime/jit_plan.h"
#include "runtime/plan_cache.h"
#include "runtime/replay.h"

namespace sdx::runtime {
namespace {

using obs::DiagCategory;
using obs::DiagLevel;

// Records into the process-wide diagnostics when the category is on at `at` (one relaxed load otherwise).
// `detail` is only built then.
template <typename F>
void diag(DiagCategory c, DiagLevel at, const char* event, F&& detail) {
  obs::Diagnostics::global().record_lazy(c, at, event, std::forward<F>(detail));
}

}  // namespace

std::string Executor::describe(const TensorArg* args) const {
  std::string s;
  for (size_t i = 0; i < c_.inputs->size(); ++i) {
    s += (i ? ", " : "") + (*c_.inputs)[i].name + " [";
    for (int d = 0; d < args[i].rank; ++d) s += (d ? ", " : "") + std::to_string(args[i].dims[d]);
    s += "]";
  }
  return s;
}

void Executor::fill_mode(ExecutionReport& r) const {
  r.mode_requested = c_.mode.requested;
  r.mode_fallback_reason = c_.mode.reason.empty() ? nullptr : c_.mode.reason.c_str();
}

Status Executor::run_frame(const plan::Plan& plan, const TensorArg* args, const std::vector<int>& outputs, Context& ctx,
                           StepObserver* observer, const std::vector<Tensor>* planned) const {
  const ir::Graph& g = *c_.graph;
  Frame frame(&g, nullptr);
  frame.observer = observer;
  frame.planned = planned;
  std::vector<const Buffer*> caller_buffers;
  for (size_t i = 0; i < c_.input_values->size(); ++i) {
    Tensor t = Tensor::borrow(args[i].dtype, Shape(std::vector<int64_t>(args[i].dims, args[i].dims + args[i].rank)),
                              const_cast<void*>(args[i].data));
    caller_buffers.push_back(t.buffer().get());
    frame.slots[static_cast<size_t>((*c_.input_values)[i]->index())] = Datum::tensor(std::move(t));
  }
  for (const auto& [idx, t] : ctx.variables_) frame.slots[static_cast<size_t>(idx)] = Datum::tensor(t);
  SDX_RETURN_IF_ERROR(c_.graph_executor->run(frame, plan), "");
  ctx.outputs_.clear();
  for (int o : outputs) {
    Datum d = frame.lookup(g.outputs()[static_cast<size_t>(o)]);
    // Never keep the caller's input memory: it may change before the caller reads the output.
    if (d.is_tensor() && d.as_tensor().buffer()) {
      const Buffer* b = d.as_tensor().buffer().get();
      if (std::find(caller_buffers.begin(), caller_buffers.end(), b) != caller_buffers.end()) {
        SDX_ASSIGN_OR_RETURN(Tensor copy, d.as_tensor().clone(), "output");
        d = Datum::tensor(std::move(copy));
      }
    }
    ctx.outputs_.push_back(std::move(d));
  }
  ctx.outputs_owner_ = nullptr;
  return Status::ok();
}

Status Executor::run_slot_by_slot(Context& ctx, const plan::Plan& plan, const TensorArg* args,
                                  const std::vector<int>& outputs, ExecutionReport* report) const {
  SDX_RETURN_IF_ERROR(run_frame(plan, args, outputs, ctx, nullptr, nullptr), "");
  if (report) {
    *report = ExecutionReport();
    fill_mode(*report);
    report->slot_count = static_cast<int32_t>(plan.slots().size());
    report->fallback_reason = "execution mode SLOT_BY_SLOT";
  }
  return Status::ok();
}

Status Executor::place_memory(Context& ctx, PlanEntry& e) const {
  const plan::Plan& plan = *e.plan;
  const ir::Graph& g = plan.graph();
  std::vector<const ir::Value*> outputs;
  for (int o : e.outputs) outputs.push_back(g.outputs()[static_cast<size_t>(o)]);
  std::vector<plan::StaticInput> inputs;
  for (size_t i = 0; i < c_.input_values->size(); ++i)
    if (i >= e.borrowed_.size() || !e.borrowed_[i])  // a borrowed input is read where the caller keeps it
      inputs.push_back({(*c_.input_values)[i], e.signature[i].first, e.signature[i].second});
  SDX_ASSIGN_OR_RETURN(plan::MemoryLayout layout, plan::layout_memory(plan, e.shapes_, outputs, inputs), "");
  e.memory_ = std::move(layout.memory);
  diag(DiagCategory::kColoring, DiagLevel::kSummary, "COLORING_DONE", [&] {
    return std::to_string(e.memory_.num_requests) + " values -> " + std::to_string(e.memory_.num_colors()) + " colors (" +
           plan::strategy_name(e.memory_.chosen) + "): " + plan::format_bytes(e.memory_.naive_bytes) + " one buffer per value, " +
           plan::format_bytes(std::min(e.memory_.coloring_bytes, e.memory_.arena_bytes)) + " planned, peak live " +
           plan::format_bytes(e.memory_.peak_live_bytes);
  });
  e.planned_.assign(g.values().size(), Tensor());
  e.bytes_ = 0;
  const size_t first = e.blocks_.size();
  for (size_t b = 0; b < layout.block_bytes.size(); ++b) {
    const int64_t bytes = layout.block_bytes[b];
    std::shared_ptr<void> block = c_.cache->pool().acquire(bytes, layout.block_dtype[b], Device::kCpu);
    if (!block) return resource_exhausted("cannot allocate a " + plan::format_bytes(bytes) + " frozen buffer");
    e.bytes_ += bytes;
    e.blocks_.push_back(FrozenBlock{std::move(block), bytes, layout.block_dtype[b]});
  }
  for (const plan::Placement& p : layout.placements) {
    Tensor& t = e.planned_[static_cast<size_t>(p.value)];
    if (p.block < 0) {  // a string input: a tensor of its own, assigned element-wise on each call
      SDX_ASSIGN_OR_RETURN(t, Tensor::allocate(p.dtype, p.shape), "static input");
      continue;
    }
    const FrozenBlock& b = e.blocks_[first + static_cast<size_t>(p.block)];
    t = Tensor::borrow(p.dtype, p.shape, static_cast<char*>(b.block.get()) + p.offset, b.block);
  }
  return Status::ok();
}

void Executor::build_jit_plan(Context& ctx, PlanEntry& e) const {
  // CPU_JIT: the fusible segments of this plan at these shapes; their kernels compile in the
  // background from here on (a disk-cache hit is loaded now). Kept across passivation.
  const plan::Plan& plan = *e.plan;
  const std::vector<plan::RecordedSlot>& rec = e.shapes_;
  std::vector<jit::ValueType> types(plan.slots().size());
  for (size_t s = 0; s < plan.slots().size(); ++s) {
    const plan::Slot& slot = plan.slots()[s];
    jit::ValueType& t = types[s];
    const int v = slot.value->index();
    if (slot.kind == plan::SlotKind::kInput) {
      for (size_t i = 0; i < c_.input_values->size(); ++i)
        if ((*c_.input_values)[i] == slot.value) t = {true, e.signature[i].first, e.signature[i].second};
    } else if (slot.kind == plan::SlotKind::kInitializer) {
      const Tensor* init = &slot.value->initializer();
      for (const auto& [idx, var] : ctx.variables_)
        if (idx == v) init = &var;
      t = {true, init->dtype(), init->shape()};
    } else if (rec[s].seen && rec[s].stable && !rec[s].shared) {
      t = {true, rec[s].dtype, rec[s].shape};
    }
  }
  e.jit_ = make_jit_plan(plan, types, *c_.jit);
}

void Executor::choose_borrowed(PlanEntry& e, const TensorArg* args) const {
  e.borrowed_.clear();
  if (!args || e.no_borrow_ || e.last_inputs_.size() != c_.input_values->size()) return;
  for (size_t i = 0; i < e.last_inputs_.size(); ++i) {
    const TensorArg& a = args[i];
    const int64_t bytes = dtype_is_byte_addressable(a.dtype) && a.dtype != DType::kString
                              ? static_cast<int64_t>(dtype_storage_bytes(a.dtype, e.signature[i].second.numel()))
                              : 0;
    // Small inputs cost nothing to copy; a large one at the same address twice is a buffer the caller
    // keeps (a KV pool, an image it refills): read there on every replay instead of copied.
    e.borrowed_.push_back(bytes >= kBorrowMinBytes && a.data && a.data == e.last_inputs_[i]);
  }
  if (e.num_borrowed() == 0) e.borrowed_.clear();
}

Status Executor::freeze(Context& ctx, PlanEntry& e, const TensorArg* args) const {
  choose_borrowed(e, args);
  if (e.recorder_) {
    e.shapes_ = e.recorder_->slots();
    e.recorder_.reset();
  }
  SDX_RETURN_IF_ERROR(place_memory(ctx, e), "");
  if (c_.jit && !e.jit_) build_jit_plan(ctx, e);
  e.phase_ = PlanPhase::kShapesFrozen;
  c_.cache->account(&e);
  return Status::ok();
}

Status Executor::warmup_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                             const char** fallback) const {
  SDX_RETURN_IF_ERROR(run_frame(*e.plan, args, outputs, ctx, e.recorder_.get(), nullptr), "");
  *fallback = "warming up: recording shapes";
  diag(DiagCategory::kWarmup, DiagLevel::kDetailed, "WARMUP_RUN", [&] {
    return "warmup run " + std::to_string(e.warmup_runs_ + 1) + " of " + std::to_string(c_.warmup_runs) + " (" +
           describe(args) + ")";
  });
  // The plan freezes when this signature comes again (run()), not now: a signature seen once (a decode
  // loop's growing KV length) then costs a slot-by-slot run and no frozen memory.
  ++e.warmup_runs_;
  e.last_inputs_.resize(c_.input_values->size());
  for (size_t i = 0; i < e.last_inputs_.size(); ++i) e.last_inputs_[i] = args[i].data;
  return Status::ok();
}

Status Executor::unborrow_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                               const char** fallback, bool aliased) const {
  // The plan reads a borrowed input where it was; the caller's array is elsewhere now (a new buffer of
  // the same shape: the next sequence's KV pool), or an output would alias it. Frozen again and captured
  // by this call: borrowing at the new addresses while moves stay rare (the first kMaxBorrowMoves, then
  // one per kBorrowMoveCalls calls on average at most), copying the inputs from then on otherwise.
  ++e.borrow_moves_;
  const bool again = !aliased && (e.borrow_moves_ <= kMaxBorrowMoves || e.borrow_moves_ * kBorrowMoveCalls <= e.calls_);
  diag(DiagCategory::kCapture, DiagLevel::kSummary, "INPUT_MOVED", [&] {
    return std::string(aliased ? "an output would be a view of an input read in place"
                               : "an input read in place came at another address") +
           " (" + describe(args) + "): the plan is frozen again and " +
           (again ? "reads it at its new address" : "copies its inputs from now on");
  });
  ctx.release_memory(e);
  if (!again) e.no_borrow_ = true;
  for (size_t i = 0; i < e.last_inputs_.size(); ++i) e.last_inputs_[i] = args[i].data;
  SDX_RETURN_IF_ERROR(freeze(ctx, e, again ? args : nullptr), "");
  return capture_call(ctx, e, args, outputs, fallback);
}

Status Executor::capture_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                              const char** fallback) const {
  std::unique_ptr<ReplayHandle> h;
  if (!e.no_replay_reason_) {
    std::vector<const ir::Value*> output_values;
    for (int o : outputs) output_values.push_back(c_.graph->outputs()[static_cast<size_t>(o)]);
    SDX_ASSIGN_OR_RETURN(h, ReplayHandle::capture(*c_.graph_executor, e, *c_.input_values, args, output_values,
                                                  ctx.variables_), "capture");
    // An output that is a view of a borrowed input would hand the caller its own memory back.
    if (h && h->outputs_alias_borrowed()) return unborrow_call(ctx, e, args, outputs, fallback, true);
  }
  if (!h) {
    SDX_RETURN_IF_ERROR(run_frame(*e.plan, args, outputs, ctx, nullptr, &e.planned_), "");
    *fallback = e.no_replay_reason_;
    diag(DiagCategory::kFallback, DiagLevel::kSummary, "NO_REPLAY", [&] {
      return std::string("CPU_REPLAY unavailable for this plan, running slot by slot in frozen memory: ") +
             (e.no_replay_reason_ ? e.no_replay_reason_ : "?");
    });
    if (c_.on_captured && *c_.on_captured) (*c_.on_captured)(e);
    return Status::ok();
  }
  install(ctx, e, std::move(h), outputs, false);
  *fallback = "capturing";
  return Status::ok();
}

void Executor::install(Context& ctx, PlanEntry& e, std::unique_ptr<ReplayHandle> h, const std::vector<int>& outputs,
                       bool bound_only) const {
  diag(DiagCategory::kCapture, DiagLevel::kSummary, "CAPTURED", [&] {
    return std::to_string(h->count(NodePhase::kCaptured)) + " captured steps (" + std::to_string(h->num_bound()) +
           " bound calls" + (bound_only ? ", bound without a run: this call replays" : "") + "), " +
           std::to_string(h->count(NodePhase::kGap)) + " gap, " + std::to_string(h->count(NodePhase::kSlotBySlot)) +
           " slot by slot";
  });
  if (h->count(NodePhase::kGap) > 0)
    diag(DiagCategory::kGaps, DiagLevel::kSummary, "GAP_STEPS", [&] {
      return std::to_string(h->count(NodePhase::kGap)) + " data-dependent steps run eagerly in every replay";
    });
  e.replay_ = std::move(h);
  e.phase_ = PlanPhase::kCaptured;
  ctx.outputs_.clear();
  for (size_t i = 0; i < outputs.size(); ++i) ctx.outputs_.push_back(e.replay_->output(i));
  ctx.outputs_owner_ = &e;
  if (c_.on_captured && *c_.on_captured) (*c_.on_captured)(e);
}

Status Executor::bind_recorded(Context& ctx, PlanEntry& e, const TensorArg* args,
                               const std::vector<int>& outputs) const {
  if (e.no_replay_reason_) return Status::ok();
  std::vector<const ir::Value*> output_values;
  for (int o : outputs) output_values.push_back(c_.graph->outputs()[static_cast<size_t>(o)]);
  const ir::Node* must_run = nullptr;
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<ReplayHandle> h,
                       ReplayHandle::capture(*c_.graph_executor, e, *c_.input_values, args, output_values,
                                             ctx.variables_, /*bind_only=*/true, &must_run),
                       "binding a recorded plan");
  if (h) {
    install(ctx, e, std::move(h), outputs, true);
  } else if (must_run) {
    diag(DiagCategory::kCapture, DiagLevel::kSummary, "CAPTURE_NEEDS_RUN", [&] {
      return must_run->describe() + " has no bound form, so the recorded plan is captured by running " +
             (args ? "this call" : "its first call") + " (the next one replays)";
    });
  }
  return Status::ok();
}

Status Executor::replay_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                             const char** fallback, bool* replayed) const {
  if (!e.replay_->inputs_in_place(args)) return unborrow_call(ctx, e, args, outputs, fallback, false);
  bool diverged = false;
  SDX_RETURN_IF_ERROR(e.replay_->replay(args, &diverged), "");
  if (diverged) {
    // An eagerly run step changed an output's type or shape with the input values: the bindings no
    // longer hold. Run this call slot by slot in the frozen memory and stop replaying this plan.
    e.replay_.reset();
    e.phase_ = PlanPhase::kShapesFrozen;
    e.no_replay_reason_ = "a step's output shape depends on input values; replay stopped for this plan";
    SDX_RETURN_IF_ERROR(run_frame(*e.plan, args, outputs, ctx, nullptr, &e.planned_), "");
    *fallback = e.no_replay_reason_;
    diag(DiagCategory::kFallback, DiagLevel::kSummary, "REPLAY_DIVERGED",
         [&] { return std::string(e.no_replay_reason_) + " (" + describe(args) + ")"; });
    diag(DiagCategory::kGraphReplay, DiagLevel::kSummary, "DIVERGED", [&] { return describe(args); });
    return Status::ok();
  }
  e.phase_ = PlanPhase::kReplaying;
  ++e.replays_;
  *replayed = true;
  if (ctx.outputs_owner_ != &e || ctx.outputs_.size() != outputs.size()) {
    ctx.outputs_.clear();
    for (size_t i = 0; i < outputs.size(); ++i) ctx.outputs_.push_back(e.replay_->output(i));
    ctx.outputs_owner_ = &e;
  } else {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (!e.replay_->output_is_static(i)) ctx.outputs_[i] = e.replay_->output(i);
  }
  return Status::ok();
}

Status Executor::freeze_recorded(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                                 bool at_load) const {
  if (e.phase_ != PlanPhase::kWarmup || e.shapes_.empty()) return Status::ok();
  if (e.calls_ == 0)
    diag(DiagCategory::kCache, DiagLevel::kSummary, "PLAN_FROM_BUNDLE", [&] {
      return std::string("warmup record of this signature from the bundle: frozen and bound ") +
             (at_load ? "at load, so the first call replays (" : "on the first call, which replays (") +
             describe(args) + ")";
    });
  else
    diag(DiagCategory::kCache, DiagLevel::kSummary, "REFREEZE_AFTER_PASSIVATION", [&] {
      return "plan memory was passivated under the plan cache's memory budget; frozen again from the kept warmup "
             "record (" + describe(args) + ")";
    });
  e.passivated.store(false, std::memory_order_relaxed);
  SDX_RETURN_IF_ERROR(freeze(ctx, e), "");
  return bind_recorded(ctx, e, at_load ? nullptr : args, outputs);
}

Status Executor::run(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                     std::chrono::steady_clock::time_point t0, ExecutionReport* report) const {
  e.last_used.store(c_.cache->tick(), std::memory_order_relaxed);
  if (e.calls_ == 0 && e.warmup_runs_ == 0 && e.phase_ == PlanPhase::kWarmup && e.shapes_.empty()) {
    // A new plan entry: its first calls run slot by slot to learn the shapes.
    diag(DiagCategory::kFallback, DiagLevel::kSummary, "NEW_SHAPE_SIGNATURE", [&] {
      return "new input-shape signature (" + describe(args) + "): " + std::to_string(c_.warmup_runs) +
             " warmup run(s) slot by slot, then freeze and capture";
    });
    diag(DiagCategory::kShapes, DiagLevel::kSummary, "SIGNATURE", [&] { return describe(args); });
    if (!c_.shape_buckets && (c_.on_shapes_vary ||
                              obs::Diagnostics::global().enabled(DiagCategory::kFallback, DiagLevel::kSummary)))
      if (ShapeVariety::Varied v = variety_.add(*c_.inputs, args, c_.on_shapes_vary && c_.act_on_pressure && [&] {
            const PlanCacheStats s = c_.cache->stats();
            return s.evictions + s.passivations > 0;
          }());
          !v.text.empty() || v.act) {
        const std::string did = c_.on_shapes_vary ? (*c_.on_shapes_vary)(v) : "";
        if (!v.text.empty())
          diag(DiagCategory::kFallback, DiagLevel::kSummary, "SHAPES_VARY",
               [&] { return did.empty() ? v.text : v.text + ". " + did; });
        if (v.act && !did.empty()) diag(DiagCategory::kFallback, DiagLevel::kSummary, "SHAPES_BUCKETED", [&] { return did; });
      }
  }
  SDX_RETURN_IF_ERROR(freeze_recorded(ctx, e, args, outputs), "");
  if (e.phase_ == PlanPhase::kWarmup && e.warmup_runs_ >= c_.warmup_runs) SDX_RETURN_IF_ERROR(freeze(ctx, e, args), "");
  const char* fallback = nullptr;
  bool replayed = false;
  switch (e.phase_) {
    case PlanPhase::kWarmup: SDX_RETURN_IF_ERROR(warmup_call(ctx, e, args, outputs, &fallback), ""); break;
    case PlanPhase::kShapesFrozen: SDX_RETURN_IF_ERROR(capture_call(ctx, e, args, outputs, &fallback), ""); break;
    case PlanPhase::kCaptured:
    case PlanPhase::kReplaying: SDX_RETURN_IF_ERROR(replay_call(ctx, e, args, outputs, &fallback, &replayed), ""); break;
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  finish_call(e, us, replayed, fallback, report);
  return Status::ok();
}

void Executor::report_pool_moves() const {
  if (!c_.threads || !obs::Diagnostics::global().enabled(DiagCategory::kLatency)) return;
  // The pool's colocation rule acted since the last report (cpu::ThreadPool, "Colocation"). relaxed: a
  // counter compared for a report; nothing is published through it.
  const uint32_t moves = c_.threads->colocation_moves();
  if (reported_pool_moves_.exchange(moves, std::memory_order_relaxed) != moves)
    diag(DiagCategory::kLatency, DiagLevel::kSummary, "POOL_WORKER_MOVED", [&] {
      return "an intra-op worker was on the calling thread's CPU and moved to the pool's other CPUs (" +
             std::to_string(moves) + " move(s) in this session so far); until it did, this call ran on one CPU";
    });
}

void Executor::finish_call(PlanEntry& e, double us, bool replayed, const char* fallback, ExecutionReport* report) const {
  ++e.calls_;
  e.avg_us_ += (us - e.avg_us_) / static_cast<double>(std::min<int64_t>(e.calls_, 100));
  if (replayed) diag(DiagCategory::kGraphReplay, DiagLevel::kFull, "REPLAY", [&] { return std::to_string(us) + " us"; });
  diag(DiagCategory::kExecute, DiagLevel::kFull, replayed ? "CALL_REPLAYED" : "CALL_SLOT_BY_SLOT",
       [&] { return std::string(plan_phase_name(e.phase_)) + ", " + std::to_string(us) + " us"; });
  diag(DiagCategory::kLatency, DiagLevel::kFull, "CALL_US", [&] { return std::to_string(us); });
  report_pool_moves();
  if (!report) return;
  fill_mode(*report);
  report->slot_count = static_cast<int32_t>(e.plan->slots().size());
  report->mode_used = replayed ? ExecutionMode::kCpuReplay : ExecutionMode::kSlotBySlot;
  report->phase = e.phase_;
  report->replay_count = e.replays_;
  report->call_count = e.calls_;
  report->avg_latency_us = e.avg_us_;
  report->peak_memory_bytes = e.bytes_;
  report->captured_steps = e.replay_ ? e.replay_->count(NodePhase::kCaptured) : 0;
  report->gap_steps = e.replay_ ? e.replay_->count(NodePhase::kGap) : 0;
  report->slot_by_slot_steps = e.replay_ ? e.replay_->count(NodePhase::kSlotBySlot) : 0;
  report->fallback_reason = fallback;
  report->optimization = c_.optimization;
  report->jit_segments = report->jit_fused_segments = report->jit_fused_steps = 0;
  report->jit_pending_segments = report->jit_failed_segments = 0;
  if (e.jit_) {
    report->jit_segments = static_cast<int32_t>(e.jit_->segments.size());
    report->jit_fused_segments = e.jit_->count(jit::SegmentState::kFused);
    report->jit_pending_segments = e.jit_->count(jit::SegmentState::kCompiling) + e.jit_->count(jit::SegmentState::kReady);
    report->jit_failed_segments = e.jit_->count(jit::SegmentState::kFailed) + e.jit_->count(jit::SegmentState::kRejected);
    for (const PlannedSegment& s : e.jit_->segments)
      if (s.fused) report->jit_fused_steps += s.segment.num_steps();
  }
}

}  // namespace sdx::runtime
