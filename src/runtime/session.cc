#include "runtime/session.h"

#include "obs/diagnostics.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "frontend/onnx/onnx_loader.h"
#include "ir/op_schema.h"
#include "ir/model_verifier.h"
#include "ir/type_inference.h"
#include "ir/verifier.h"
#include "jit/jit_engine.h"
#include "runtime/jit_plan.h"
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

std::string describe_args(const std::vector<ValueInfo>& inputs, const TensorArg* args) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += (i ? ", " : "") + inputs[i].name + " [";
    for (int d = 0; d < args[i].rank; ++d) s += (d ? ", " : "") + std::to_string(args[i].dims[d]);
    s += "]";
  }
  return s;
}

}  // namespace


std::string describe_unsupported(const std::vector<const ir::Node*>& nodes) {
  std::map<std::string, std::vector<std::string>> by_op;
  for (const ir::Node* n : nodes) {
    std::string op = (n->domain().empty() ? "" : n->domain() + ".") + n->op_type() + " (opset " + std::to_string(n->opset()) + ")";
    by_op[op].push_back("'" + n->name() + "'");
  }
  std::string msg = std::to_string(by_op.size()) + " unsupported operator" + (by_op.size() == 1 ? "" : "s") + ": ";
  bool first = true;
  for (const auto& [op, names] : by_op) {
    if (!first) msg += "; ";
    first = false;
    msg += op + " at node" + (names.size() == 1 ? " " : "s ");
    for (size_t i = 0; i < names.size() && i < 8; ++i) msg += (i ? ", " : "") + names[i];
    if (names.size() > 8) msg += ", ... (" + std::to_string(names.size()) + " in all)";
  }
  return msg;
}

Result<std::unique_ptr<Session>> Session::load_file(const std::string& path, SessionOptions options) {
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_file(path), "");
  auto s = create(std::move(model), options);
  if (!s.is_ok()) return s.status().with_context("model '" + path + "'");
  return s;
}

Result<std::unique_ptr<Session>> Session::load_bytes(const std::string& bytes, SessionOptions options) {
  SDX_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model_bytes(bytes), "");
  return create(std::move(model), options);
}

Result<std::unique_ptr<Session>> Session::create(ir::Model model, SessionOptions options) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::move(model);
  SDX_ASSIGN_OR_RETURN(s->options_, SessionOptions::from_env(options), "session options");
  SDX_RETURN_IF_ERROR(s->init(), "");
  return s;
}

Session::~Session() = default;

bool Session::wait_for_jit(double timeout_s) const { return jit_ ? jit_->wait_idle(timeout_s) : true; }

Status Session::init() {
  if (!model_.graph) return invalid_argument("model has no graph");
  mode_ = resolve_execution_mode(options_.execution_mode);
  if (!mode_.reason.empty()) {
    // Asked for a mode this machine cannot run: say so once per session (the report carries it on every call).
    if (options_.log_level >= 1) std::fprintf(stderr, "sdx: warning: execution mode %s\n", mode_.reason.c_str());
    diag(DiagCategory::kFallback, DiagLevel::kSummary, "MODE_FALLBACK", [&] { return mode_.reason; });
  }
  // The gate first: type inference and every pass may assume a model that passed it.
  SDX_RETURN_IF_ERROR(ir::verify_model(model_), "verifier");
  SDX_RETURN_IF_ERROR(ir::infer_types(*model_.graph), "type inference");
  SDX_RETURN_IF_ERROR(ir::verify(*model_.graph), "verifier");
  // Who reads each initializer, before the optimizer may fold, merge or fuse it (see set_variable).
  auto readers = [](const ir::Value* v) {
    std::vector<std::string> r;
    for (const ir::Node* n : v->users()) r.push_back(n->op_type() + "/" + n->name());
    std::sort(r.begin(), r.end());
    return r;
  };
  std::map<std::string, std::vector<std::string>> readers_before;
  for (const ir::Value* v : model_.graph->initializers())
    if (!v->is_graph_input()) readers_before[v->name()] = readers(v);
  SDX_ASSIGN_OR_RETURN(optimization_, opt::optimize(*model_.graph, options_.optimizer), "graph optimizer");
  for (const ir::Value* v : model_.graph->initializers()) {
    auto it = readers_before.find(v->name());
    if (v->is_graph_input() || (it != readers_before.end() && it->second == readers(v))) overridable_.insert(v);
  }
  if (optimization_.total_rewrites() > 0) {
    // New values need types; a graph the optimizer broke is a bug in sdx, reported as such.
    Status st = ir::infer_types(*model_.graph);
    if (st.is_ok()) st = ir::verify(*model_.graph);
    if (!st.is_ok())
      return internal_error("the graph optimizer produced an invalid graph (set SDX_OPTIMIZER_ENABLED=0 to load "
                            "without it, and please report this): " + st.message());
  }
  diag(DiagCategory::kOptimizer, DiagLevel::kSummary, "OPTIMIZED", [&] {
    std::string d = std::to_string(optimization_.nodes_before) + " -> " + std::to_string(optimization_.nodes_after) +
                    " nodes;";
    for (const auto& [pass, n] : optimization_.rewrites_per_pass) d += " " + pass + " x" + std::to_string(n);
    return d;
  });
  std::vector<const ir::Node*> unsupported;
  SDX_RETURN_IF_ERROR(executor_.prepare(*model_.graph, &unsupported, compile_options()), "");
  if (!unsupported.empty()) return unimplemented(describe_unsupported(unsupported));
  for (const ir::Value* v : model_.graph->inputs())
    if (!v->is_initializer()) {
      inputs_.push_back({v->name(), v->type()});
      input_values_.push_back(v);
    }
  for (const ir::Value* v : model_.graph->outputs()) {
    all_outputs_.push_back(static_cast<int>(outputs_.size()));
    outputs_.push_back({v->name(), v->type()});
  }
  // The executor's own plan computes every output; it lives as long as the session.
  full_plan_ = std::shared_ptr<const plan::Plan>(std::shared_ptr<void>(), &executor_.plan());
  cache_ = std::make_unique<PlanCache>(options_.plan_cache_max_count, options_.plan_cache_budget_bytes());
  const int threads = std::max(options_.inter_op_num_threads, options_.intra_op_num_threads > 0
                                                                   ? options_.intra_op_num_threads
                                                                   : cpu::ThreadPool::default_num_threads());
  if (threads > 1) threads_ = std::make_unique<cpu::ThreadPool>(threads);
  if (options_.jit.enabled && mode_.used != ExecutionMode::kSlotBySlot)
    jit_ = std::make_unique<jit::JitEngine>(options_.jit);
  return Status::ok();
}

Status Session::check_feed(const ValueInfo& info, const Datum& d) const {
  const std::string where = "input '" + info.name + "'";
  using Kind = ir::TypeInfo::Kind;
  if (info.type.kind == Kind::kSequence) {
    if (!d.is_sequence()) return invalid_argument(where + ": expected a sequence of tensors");
    return Status::ok();
  }
  if (info.type.kind == Kind::kOptional) return Status::ok();
  if (!d.is_tensor()) return invalid_argument(where + ": expected a tensor");
  const Tensor& t = d.as_tensor();
  TensorArg a{t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()};
  return check_arg(info, a);
}

Status Session::check_arg(const ValueInfo& info, const TensorArg& a) const {
  // Builds messages only on failure: a valid call allocates nothing here.
  using Kind = ir::TypeInfo::Kind;
  auto where = [&] { return "input '" + info.name + "'"; };
  auto got = [&] {
    std::vector<int64_t> dims(a.dims, a.dims + a.rank);
    return dims_to_string(dims);
  };
  if (info.type.kind != Kind::kTensor)
    return invalid_argument(where() + ": expected " + info.type.to_string() + ", which the positional run cannot take");
  if (a.rank < 0 || (a.rank > 0 && !a.dims)) return invalid_argument(where() + ": invalid rank or dims");
  int64_t numel = 1;
  for (int i = 0; i < a.rank; ++i) {
    if (a.dims[i] < 0) return invalid_argument(where() + ": negative dimension in shape " + got());
    auto m = checked_mul(numel, a.dims[i]);
    if (!m.is_ok()) return invalid_argument(where() + ": shape " + got() + " has too many elements");
    numel = m.value();
  }
  if (numel > 0 && !a.data) return invalid_argument(where() + ": data is null");
  if (info.type.elem != DType::kUndefined && a.dtype != info.type.elem)
    return invalid_argument(where() + ": expected element type " + dtype_name(info.type.elem) + " but got " +
                            dtype_name(a.dtype));
  if (info.type.shape) {
    const auto& dims = *info.type.shape;
    if (static_cast<int>(dims.size()) != a.rank)
      return invalid_argument(where() + ": expected rank " + std::to_string(dims.size()) + " with shape " +
                              info.type.shape_string() + " but got rank " + std::to_string(a.rank) + " with shape " +
                              got());
    for (int i = 0; i < a.rank; ++i)
      if (dims[static_cast<size_t>(i)].is_fixed() && dims[static_cast<size_t>(i)].value != a.dims[i])
        return invalid_argument(where() + ": dimension " + std::to_string(i) + " must be " +
                                std::to_string(dims[static_cast<size_t>(i)].value) + " (expected shape " +
                                info.type.shape_string() + ") but got shape " + got());
  }
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

std::unique_ptr<Context> Session::create_context() const { return std::unique_ptr<Context>(new Context(cache_.get())); }

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
  if (last && last->mode == mode_.used && last->outputs == outputs &&
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
  h = mix(h, static_cast<uint64_t>(mode_.used));
  PlanEntry& e = ctx.entry_for(outputs, sig, mode_.used, h, plan_for(outputs));
  ctx.last_ = &e;
  return e;
}

Status Session::run_frame(const plan::Plan& plan, const TensorArg* args, const std::vector<int>& outputs, Context& ctx,
                          StepObserver* observer, const std::vector<Tensor>* planned) const {
  const ir::Graph& g = *model_.graph;
  Frame frame(&g, nullptr);
  frame.observer = observer;
  frame.planned = planned;
  std::vector<const Buffer*> caller_buffers;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    Tensor t = Tensor::borrow(args[i].dtype, Shape(std::vector<int64_t>(args[i].dims, args[i].dims + args[i].rank)),
                              const_cast<void*>(args[i].data));
    caller_buffers.push_back(t.buffer().get());
    frame.slots[static_cast<size_t>(input_values_[i]->index())] = Datum::tensor(std::move(t));
  }
  for (const auto& [idx, t] : ctx.variables_) frame.slots[static_cast<size_t>(idx)] = Datum::tensor(t);
  SDX_RETURN_IF_ERROR(executor_.run(frame, plan), "");
  ctx.outputs_.clear();
  for (int o : outputs) {
    Datum d = frame.lookup(g.outputs()[static_cast<size_t>(o)]);
    // Never keep the caller's input memory: it may change before the caller reads the output.
    if (d.is_tensor() && d.as_tensor().buffer()) {
      const Buffer* b = d.as_tensor().buffer().get();
      for (const Buffer* cb : caller_buffers)
        if (cb == b) {
          SDX_ASSIGN_OR_RETURN(Tensor copy, d.as_tensor().clone(), "output");
          d = Datum::tensor(std::move(copy));
          break;
        }
    }
    ctx.outputs_.push_back(std::move(d));
  }
  ctx.outputs_owner_ = nullptr;
  return Status::ok();
}

Status Session::freeze(Context& ctx, PlanEntry& e) const {
  const plan::Plan& plan = *e.plan;
  const ir::Graph& g = plan.graph();
  if (e.recorder) {
    e.shapes = e.recorder->slots();
    e.recorder.reset();
  }
  const std::vector<RecordedSlot>& rec = e.shapes;
  std::vector<int> request_slot;
  std::vector<plan::BufferRequest> requests = planning_requests(plan, rec, &request_slot);
  SDX_ASSIGN_OR_RETURN(e.memory, plan::plan_memory(requests), "memory planning");
  diag(DiagCategory::kColoring, DiagLevel::kSummary, "COLORING_DONE", [&] {
    return std::to_string(e.memory.num_requests) + " values -> " + std::to_string(e.memory.num_colors()) + " colors (" +
           plan::strategy_name(e.memory.chosen) + "): " + plan::format_bytes(e.memory.naive_bytes) + " one buffer per value, " +
           plan::format_bytes(std::min(e.memory.coloring_bytes, e.memory.arena_bytes)) + " planned, peak live " +
           plan::format_bytes(e.memory.peak_live_bytes);
  });
  e.planned.assign(g.values().size(), Tensor());
  PlanCache& cache = *cache_;
  auto take = [&](int64_t bytes, DType dt) -> Result<FrozenBlock> {
    std::shared_ptr<void> b = cache.pool().acquire(bytes, dt, Device::kCpu);
    if (!b) return resource_exhausted("cannot allocate a " + plan::format_bytes(bytes) + " frozen buffer");
    e.bytes += bytes;
    return FrozenBlock{std::move(b), bytes, dt};
  };
  auto place = [&](int value, DType dt, const Shape& shape, const FrozenBlock& b, int64_t offset) {
    e.planned[static_cast<size_t>(value)] = Tensor::borrow(dt, shape, static_cast<char*>(b.block.get()) + offset, b.block);
  };
  e.bytes = 0;
  if (e.memory.chosen == plan::MemoryPlan::Strategy::kArena) {
    SDX_ASSIGN_OR_RETURN(FrozenBlock b, take(e.memory.arena_bytes, DType::kUint8), "");
    for (size_t r = 0; r < requests.size(); ++r) {
      const auto& slot = plan.slots()[static_cast<size_t>(request_slot[r])];
      const RecordedSlot& rs = rec[static_cast<size_t>(request_slot[r])];
      place(slot.value->index(), rs.dtype, rs.shape, b, e.memory.offset[r]);
    }
    e.blocks.push_back(std::move(b));
  } else {
    const size_t first = e.blocks.size();
    for (int64_t bytes : e.memory.color_bytes) {
      SDX_ASSIGN_OR_RETURN(FrozenBlock b, take(bytes, DType::kUint8), "");
      e.blocks.push_back(std::move(b));
    }
    for (size_t r = 0; r < requests.size(); ++r) {
      const auto& slot = plan.slots()[static_cast<size_t>(request_slot[r])];
      const RecordedSlot& rs = rec[static_cast<size_t>(request_slot[r])];
      place(slot.value->index(), rs.dtype, rs.shape, e.blocks[first + static_cast<size_t>(e.memory.color[r])], 0);
    }
  }
  // Requested outputs with a stable, value-independent shape get their own static buffers
  // (never shared with intermediates: the caller reads them after the run).
  std::vector<bool> tainted = tainted_slots(plan);
  for (int o : e.outputs) {
    const ir::Value* v = g.outputs()[static_cast<size_t>(o)];
    const int s = plan.slot_of(v);
    if (s < 0 || e.planned[static_cast<size_t>(v->index())].defined()) continue;
    const plan::Slot& slot = plan.slots()[static_cast<size_t>(s)];
    const RecordedSlot& rs = rec[static_cast<size_t>(s)];
    if (slot.kind != plan::SlotKind::kIntermediate || !rs.seen || !rs.stable || rs.shared || rs.view_of >= 0 || tainted[static_cast<size_t>(s)] ||
        !dtype_is_byte_addressable(rs.dtype))
      continue;
    SDX_ASSIGN_OR_RETURN(FrozenBlock b, take(static_cast<int64_t>(dtype_storage_bytes(rs.dtype, rs.shape.numel())), rs.dtype), "");
    place(v->index(), rs.dtype, rs.shape, b, 0);
    e.blocks.push_back(std::move(b));
  }
  // Static input buffers: replay copies each call's inputs here, so every address is fixed.
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const auto& [dt, shape] = e.signature[i];
    if (dt == DType::kString) {  // string objects: a tensor of its own, assigned element-wise on each call
      SDX_ASSIGN_OR_RETURN(e.planned[static_cast<size_t>(input_values_[i]->index())], Tensor::allocate(dt, shape),
                           "static input '" + inputs_[i].name + "'");
      continue;
    }
    SDX_ASSIGN_OR_RETURN(FrozenBlock b, take(static_cast<int64_t>(dtype_storage_bytes(dt, shape.numel())), dt), "");
    place(input_values_[i]->index(), dt, shape, b, 0);
    e.blocks.push_back(std::move(b));
  }
  // CPU_JIT: the fusible segments of this plan at these shapes; their kernels compile in the
  // background from here on (a disk-cache hit is loaded now). Kept across passivation.
  if (jit_ && !e.jit) {
    std::vector<jit::ValueType> types(plan.slots().size());
    for (size_t s = 0; s < plan.slots().size(); ++s) {
      const plan::Slot& slot = plan.slots()[s];
      jit::ValueType& t = types[s];
      const int v = slot.value->index();
      if (slot.kind == plan::SlotKind::kInput) {
        for (size_t i = 0; i < input_values_.size(); ++i)
          if (input_values_[i] == slot.value) t = {true, e.signature[i].first, e.signature[i].second};
      } else if (slot.kind == plan::SlotKind::kInitializer) {
        const Tensor* init = &slot.value->initializer();
        for (const auto& [idx, var] : ctx.variables_)
          if (idx == v) init = &var;
        t = {true, init->dtype(), init->shape()};
      } else if (rec[s].seen && rec[s].stable && !rec[s].shared) {
        t = {true, rec[s].dtype, rec[s].shape};
      }
    }
    e.jit = make_jit_plan(plan, types, *jit_);
  }
  e.phase = PlanPhase::kShapesFrozen;
  cache.account(&e);
  return Status::ok();
}

Status Session::freeze_shapes(Context& ctx) const {
  ctx.reclaim();
  PlanEntry* e = ctx.last_;
  if (!e) return failed_precondition("freeze_shapes: no run on this context yet; shapes are learned by a warmup run");
  if (e->phase != PlanPhase::kWarmup) return Status::ok();
  if (e->warmup_runs == 0 && e->shapes.empty())
    return failed_precondition("freeze_shapes: the current plan has not completed a warmup run");
  return freeze(ctx, *e);
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
  cpu::ScopedThreadPool bind_threads(threads_.get());
  if (num_inputs != inputs_.size())
    return invalid_argument("the model takes " + std::to_string(inputs_.size()) + " inputs but " +
                            std::to_string(num_inputs) + " were given");
  for (size_t i = 0; i < num_inputs; ++i) SDX_RETURN_IF_ERROR(check_arg(inputs_[i], args[i]), "");
  const std::vector<int>& outputs = requested.empty() ? all_outputs_ : requested;
  for (int o : outputs)
    if (o < 0 || o >= static_cast<int>(outputs_.size()))
      return invalid_argument("output position " + std::to_string(o) + " is out of range: the model has " +
                              std::to_string(outputs_.size()) + " outputs");
  ctx.reclaim();
  if (mode_.used == ExecutionMode::kSlotBySlot) {
    SDX_RETURN_IF_ERROR(run_frame(*plan_for(outputs), args, outputs, ctx, nullptr, nullptr), "");
    if (report) {
      *report = ExecutionReport();
      fill_mode(*report);
      report->slot_count = static_cast<int32_t>(plan_for(outputs)->slots().size());
      report->fallback_reason = "execution mode SLOT_BY_SLOT";
    }
    return Status::ok();
  }
  PlanEntry& e = entry_for(ctx, args, outputs);
  e.last_used.store(cache_->tick(), std::memory_order_relaxed);
  if (e.calls == 0 && e.warmup_runs == 0 && e.phase == PlanPhase::kWarmup) {
    // A new plan entry: its first calls run slot by slot to learn the shapes.
    diag(DiagCategory::kFallback, DiagLevel::kSummary, "NEW_SHAPE_SIGNATURE", [&] {
      return "new input-shape signature (" + describe_args(inputs_, args) + "): " +
             std::to_string(options_.warmup_runs) + " warmup run(s) slot by slot, then freeze and capture";
    });
    diag(DiagCategory::kShapes, DiagLevel::kSummary, "SIGNATURE", [&] { return describe_args(inputs_, args); });
  }
  const plan::Plan& plan = *e.plan;
  const char* fallback = nullptr;
  bool replayed = false;
  // Passivated under memory pressure: re-freeze from the kept warmup record.
  if (e.phase == PlanPhase::kWarmup && !e.shapes.empty()) {
    diag(DiagCategory::kCache, DiagLevel::kSummary, "REFREEZE_AFTER_PASSIVATION", [&] {
      return "plan memory was passivated under the plan cache's memory budget; frozen again from the kept warmup "
             "record (" + describe_args(inputs_, args) + ")";
    });
    e.passivated.store(false, std::memory_order_relaxed);
    SDX_RETURN_IF_ERROR(freeze(ctx, e), "");
  }
  auto output_values = [&] {
    std::vector<const ir::Value*> vs;
    for (int o : outputs) vs.push_back(model_.graph->outputs()[static_cast<size_t>(o)]);
    return vs;
  };
  switch (e.phase) {
    case PlanPhase::kWarmup: {
      SDX_RETURN_IF_ERROR(run_frame(plan, args, outputs, ctx, e.recorder.get(), nullptr), "");
      fallback = "warming up: recording shapes";
      diag(DiagCategory::kWarmup, DiagLevel::kDetailed, "WARMUP_RUN", [&] {
        return "warmup run " + std::to_string(e.warmup_runs + 1) + " of " + std::to_string(options_.warmup_runs) +
               " (" + describe_args(inputs_, args) + ")";
      });
      if (++e.warmup_runs >= options_.warmup_runs) SDX_RETURN_IF_ERROR(freeze(ctx, e), "");
      break;
    }
    case PlanPhase::kShapesFrozen: {
      std::unique_ptr<ReplayHandle> h;
      if (!e.no_replay_reason) {
        SDX_ASSIGN_OR_RETURN(h, ReplayHandle::capture(executor_, e, input_values_, args, output_values(), ctx.variables_),
                             "capture");
      }
      if (h) {
        diag(DiagCategory::kCapture, DiagLevel::kSummary, "CAPTURED", [&] {
          return std::to_string(h->count(NodePhase::kCaptured)) + " captured steps (" + std::to_string(h->num_bound()) +
                 " bound calls), " + std::to_string(h->count(NodePhase::kGap)) + " gap, " +
                 std::to_string(h->count(NodePhase::kSlotBySlot)) + " slot by slot";
        });
        if (h->count(NodePhase::kGap) > 0)
          diag(DiagCategory::kGaps, DiagLevel::kSummary, "GAP_STEPS", [&] {
            return std::to_string(h->count(NodePhase::kGap)) + " data-dependent steps run eagerly in every replay";
          });
        e.replay = std::move(h);
        e.phase = PlanPhase::kCaptured;
        ctx.outputs_.clear();
        for (size_t i = 0; i < outputs.size(); ++i) ctx.outputs_.push_back(e.replay->output(i));
        ctx.outputs_owner_ = &e;
        fallback = "capturing";
      } else {
        SDX_RETURN_IF_ERROR(run_frame(plan, args, outputs, ctx, nullptr, &e.planned), "");
        fallback = e.no_replay_reason;
        diag(DiagCategory::kFallback, DiagLevel::kSummary, "NO_REPLAY", [&] {
          return std::string("CPU_REPLAY unavailable for this plan, running slot by slot in frozen memory: ") +
                 (e.no_replay_reason ? e.no_replay_reason : "?");
        });
      }
      break;
    }
    case PlanPhase::kCaptured:
    case PlanPhase::kReplaying: {
      bool diverged = false;
      SDX_RETURN_IF_ERROR(e.replay->replay(args, &diverged), "");
      if (diverged) {
        // An eagerly run step changed an output's type or shape with the input values: the bindings no
        // longer hold. Run this call slot by slot in the frozen memory and stop replaying this plan.
        e.replay.reset();
        e.phase = PlanPhase::kShapesFrozen;
        e.no_replay_reason = "a step's output shape depends on input values; replay stopped for this plan";
        SDX_RETURN_IF_ERROR(run_frame(plan, args, outputs, ctx, nullptr, &e.planned), "");
        fallback = e.no_replay_reason;
        diag(DiagCategory::kFallback, DiagLevel::kSummary, "REPLAY_DIVERGED", [&] {
          return std::string(e.no_replay_reason) + " (" + describe_args(inputs_, args) + ")";
        });
        diag(DiagCategory::kGraphReplay, DiagLevel::kSummary, "DIVERGED", [&] { return describe_args(inputs_, args); });
        break;
      }
      e.phase = PlanPhase::kReplaying;
      ++e.replays;
      replayed = true;
      if (ctx.outputs_owner_ != &e || ctx.outputs_.size() != outputs.size()) {
        ctx.outputs_.clear();
        for (size_t i = 0; i < outputs.size(); ++i) ctx.outputs_.push_back(e.replay->output(i));
        ctx.outputs_owner_ = &e;
      } else {
        for (size_t i = 0; i < outputs.size(); ++i)
          if (!e.replay->output_is_static(i)) ctx.outputs_[i] = e.replay->output(i);
      }
      break;
    }
  }
  ++e.calls;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  e.avg_us += (us - e.avg_us) / static_cast<double>(std::min<int64_t>(e.calls, 100));
  if (replayed) diag(DiagCategory::kGraphReplay, DiagLevel::kFull, "REPLAY", [&] { return std::to_string(us) + " us"; });
  diag(DiagCategory::kExecute, DiagLevel::kFull, replayed ? "CALL_REPLAYED" : "CALL_SLOT_BY_SLOT",
       [&] { return std::string(plan_phase_name(e.phase)) + ", " + std::to_string(us) + " us"; });
  diag(DiagCategory::kLatency, DiagLevel::kFull, "CALL_US", [&] { return std::to_string(us); });
  if (threads_ && obs::Diagnostics::global().enabled(DiagCategory::kLatency)) {
    // The pool's colocation rule acted since the last report (cpu::ThreadPool, "Colocation"). relaxed: a
    // counter compared for a report; nothing is published through it.
    const uint32_t moves = threads_->colocation_moves();
    if (reported_pool_moves_.exchange(moves, std::memory_order_relaxed) != moves)
      diag(DiagCategory::kLatency, DiagLevel::kSummary, "POOL_WORKER_MOVED", [&] {
        return "an intra-op worker was on the calling thread's CPU and moved to the pool's other CPUs (" +
               std::to_string(moves) + " move(s) in this session so far); until it did, this call ran on one CPU";
      });
  }
  if (report) {
    fill_mode(*report);
    report->slot_count = static_cast<int32_t>(plan.slots().size());
    report->mode_used = replayed ? ExecutionMode::kCpuReplay : ExecutionMode::kSlotBySlot;
    report->phase = e.phase;
    report->replay_count = e.replays;
    report->call_count = e.calls;
    report->avg_latency_us = e.avg_us;
    report->peak_memory_bytes = e.bytes;
    report->captured_steps = e.replay ? e.replay->count(NodePhase::kCaptured) : 0;
    report->gap_steps = e.replay ? e.replay->count(NodePhase::kGap) : 0;
    report->slot_by_slot_steps = e.replay ? e.replay->count(NodePhase::kSlotBySlot) : 0;
    report->fallback_reason = fallback;
    report->optimization = &optimization_;
    if (e.jit) {
      report->jit_segments = static_cast<int32_t>(e.jit->segments.size());
      report->jit_fused_segments = e.jit->count("FUSED");
      report->jit_pending_segments = e.jit->count("COMPILING") + e.jit->count("READY");
      report->jit_failed_segments = e.jit->count("FAILED") + e.jit->count("REJECTED");
      report->jit_fused_steps = 0;
      for (const PlannedSegment& s : e.jit->segments)
        if (s.fused) report->jit_fused_steps += s.segment.num_steps();
    } else {
      report->jit_segments = report->jit_fused_segments = report->jit_fused_steps = 0;
      report->jit_pending_segments = report->jit_failed_segments = 0;
    }
  }
  return Status::ok();
}

Result<std::vector<Datum>> Session::run(const std::vector<std::pair<std::string, Datum>>& feeds,
                                        const std::vector<std::string>& output_names, StepObserver* observer,
                                        ExecutionReport* report) const {
  cpu::ScopedThreadPool bind_threads(threads_.get());
  const ir::Graph& g = *model_.graph;
  std::vector<int> outs;
  for (const std::string& name : output_names) {
    const int o = output_index(name);
    if (o < 0) {
      std::string names;
      for (const auto& out : outputs_) names += (names.empty() ? "" : ", ") + out.name;
      return invalid_argument("unknown output name '" + name + "'; the model's outputs are: " + names);
    }
    outs.push_back(o);
  }
  // Plain tensor feeds for every input go through the planned path; anything else (an observer,
  // sequences, optionals, overridden initializers) runs slot by slot in a fresh frame.
  std::vector<const Datum*> by_input(inputs_.size(), nullptr);
  bool plannable = observer == nullptr;
  std::vector<std::pair<const ir::Value*, const Datum*>> overrides;
  for (const auto& [name, datum] : feeds) {
    const int idx = input_index(name);
    if (idx < 0) {
      const ir::Value* v = g.find_value(name);
      bool is_input = false;
      if (v && v->is_initializer())
        for (const ir::Value* in : g.inputs()) is_input |= in == v;
      if (is_input) {  // overriding an initializer that is also a graph input (ONNX semantics)
        overrides.emplace_back(v, &datum);
        plannable = false;
        continue;
      }
      std::string names;
      for (const auto& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
      return invalid_argument("unknown input name '" + name + "'; the model's inputs are: " + names);
    }
    SDX_RETURN_IF_ERROR(check_feed(inputs_[static_cast<size_t>(idx)], datum), "");
    by_input[static_cast<size_t>(idx)] = &datum;
    if (!datum.is_tensor() || inputs_[static_cast<size_t>(idx)].type.kind != ir::TypeInfo::Kind::kTensor) plannable = false;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (by_input[i]) continue;
    if (inputs_[i].type.kind != ir::TypeInfo::Kind::kOptional)
      return invalid_argument("missing input '" + inputs_[i].name + "' (" + inputs_[i].type.to_string() + " with shape " +
                              inputs_[i].type.shape_string() + ")");
    plannable = false;
  }
  if (plannable) {
    std::vector<TensorArg> args;
    for (const Datum* d : by_input) {
      const Tensor& t = d->as_tensor();
      args.push_back({t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()});
    }
    std::unique_ptr<Context> ctx = pool_.acquire();
    Status s = run(*ctx, args.data(), args.size(), outs, report);
    std::vector<Datum> out;
    for (size_t i = 0; s.is_ok() && i < ctx->num_outputs(); ++i) {
      // Never hand out frozen memory (reused by the next run) or the caller's own input buffers.
      Datum d = ctx->output(i);
      if (d.is_tensor() && d.as_tensor().buffer() && d.as_tensor().buffer()->borrowed()) {
        auto copy = d.as_tensor().clone();
        if (!copy.is_ok()) s = copy.status();
        else d = Datum::tensor(std::move(copy).value());
      }
      out.push_back(std::move(d));
    }
    pool_.release(std::move(ctx));
    if (!s.is_ok()) return s;
    return out;
  }
  Frame frame(&g, nullptr);
  frame.observer = observer;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (by_input[i]) frame.slots[static_cast<size_t>(input_values_[i]->index())] = *by_input[i];
  for (const auto& [v, d] : overrides) frame.slots[static_cast<size_t>(v->index())] = *d;
  const std::vector<int>& wanted = outs.empty() ? all_outputs_ : outs;
  SDX_RETURN_IF_ERROR(executor_.run(frame, *plan_for(wanted)), "");
  std::vector<Datum> out;
  for (int o : wanted) {
    Datum d = frame.lookup(g.outputs()[static_cast<size_t>(o)]);
    if (d.is_tensor() && d.as_tensor().buffer() && d.as_tensor().buffer()->borrowed()) {
      SDX_ASSIGN_OR_RETURN(Tensor copy, d.as_tensor().clone(), "output");
      d = Datum::tensor(std::move(copy));
    }
    out.push_back(std::move(d));
  }
  if (report) {
    *report = ExecutionReport();
    fill_mode(*report);
    report->slot_count = static_cast<int32_t>(plan_for(wanted)->slots().size());
    report->fallback_reason = observer ? "observed run" : "inputs other than plain tensors";
  }
  return out;
}

}  // namespace sdx::runtime
