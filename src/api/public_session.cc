// sdx::Session, sdx::RunContext and sdx::compile_bundle (include/sdx/session.h) over runtime::Session,
// runtime::Context and the loaders of api/load.h and api/bundle.h.
#include <cstring>

#include "api/bundle.h"
#include "api/load.h"
#include "analysis/loop_monitor.h"
#include "api/public_access.h"
#include "backend/cpu/threading/parallel_copy.h"
#include "backend/cpu/threading/thread_pool.h"
#include "runtime/execution_mode.h"
#include "runtime/plan_phase.h"
#include "runtime/run_control.h"

namespace sdx {

namespace api {

RunReport public_report(const runtime::ExecutionReport& r) {
  RunReport p;
  p.slot_count = r.slot_count;
  p.execution_mode = runtime::execution_mode_name(r.mode_used);
  p.mode_requested = runtime::execution_mode_name(r.mode_requested);
  p.execution_mode_id = static_cast<int32_t>(r.mode_used);
  p.mode_requested_id = static_cast<int32_t>(r.mode_requested);
  p.mode_fallback_reason = r.mode_fallback_reason;
  p.phase = runtime::plan_phase_name(r.phase);
  p.phase_id = static_cast<int32_t>(r.phase);
  p.replay_count = r.replay_count;
  p.call_count = r.call_count;
  p.avg_latency_us = r.avg_latency_us;
  p.peak_memory_bytes = r.peak_memory_bytes;
  p.captured_steps = r.captured_steps;
  p.gap_steps = r.gap_steps;
  p.slot_by_slot_steps = r.slot_by_slot_steps;
  p.jit_segments = r.jit_segments;
  p.jit_fused_segments = r.jit_fused_segments;
  p.jit_fused_steps = r.jit_fused_steps;
  p.jit_pending_segments = r.jit_pending_segments;
  p.jit_failed_segments = r.jit_failed_segments;
  p.bucket_padding = r.bucket_padding;
  p.fallback_reason = r.fallback_reason;
  return p;
}

namespace {

std::string type_string(const ir::TypeInfo& t) {
  if (t.kind == ir::TypeInfo::Kind::kSequence && t.inner) return "seq(" + type_string(*t.inner) + ")";
  if (t.kind == ir::TypeInfo::Kind::kOptional && t.inner) return "optional(" + type_string(*t.inner) + ")";
  return t.to_string();
}

}  // namespace

ValueInfo public_value_info(const runtime::ValueInfo& v) {
  ValueInfo p;
  p.name = v.name;
  p.type = type_string(v.type);
  p.is_tensor = p.type.rfind("tensor(", 0) == 0;
  p.element_type = v.type.elem;
  p.has_shape = v.type.shape.has_value();
  if (v.type.shape)
    for (const ir::Dim& d : *v.type.shape) p.shape.push_back(Dim{d.is_fixed() ? d.value : -1, d.param});
  return p;
}

}  // namespace api

// ---- RunContext ----

RunContext::RunContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunContext::~RunContext() = default;

size_t RunContext::num_outputs() const { return impl_->ctx->num_outputs(); }

bool RunContext::output_view(size_t i, TensorView* out) const {
  const Datum& d = impl_->ctx->output(i);
  if (!d.is_tensor() || d.as_tensor().dtype() == DType::kString) return false;
  const Tensor& t = d.as_tensor();
  *out = TensorView{t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()};
  return true;
}

Value RunContext::output(size_t i) const { return api::value_of(impl_->ctx->output(i)); }

int32_t RunContext::plan_phase_id() const { return static_cast<int32_t>(impl_->ctx->phase()); }

void RunContext::set_terminate_flag(const std::atomic<bool>* flag) { impl_->terminate = flag; }

// ---- Session ----

Session::Impl::~Impl() {
  delete cached.exchange(nullptr, std::memory_order_acquire);
  overflow.clear();
}

Session SessionAccess::make(std::unique_ptr<runtime::Session> s) {
  auto impl = std::make_unique<Session::Impl>();
  for (const runtime::ValueInfo& v : s->inputs()) impl->inputs.push_back(api::public_value_info(v));
  for (const runtime::ValueInfo& v : s->outputs()) impl->outputs.push_back(api::public_value_info(v));
  impl->session = std::move(s);
  return Session(std::move(impl));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&& other) noexcept = default;
Session& Session::operator=(Session&& other) noexcept = default;

Result<Session> Session::load(const std::string& path, const SessionOptions& options) {
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s, api::load_session_file(path, api::engine_options(options)),
                       "");
  return SessionAccess::make(std::move(s));
}

Result<Session> Session::load_bytes(std::string_view bytes, const SessionOptions& options) {
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s,
                       api::load_session_bytes(std::string(bytes), api::engine_options(options)), "");
  return SessionAccess::make(std::move(s));
}

namespace {

Result<api::LoadEdits> load_edits(const ModelOverrides& o) {
  api::LoadEdits e;
  for (const auto& [name, v] : o.free_dims_by_name) e.model.free_dims.push_back({false, name, v});
  for (const auto& [name, v] : o.free_dims_by_denotation) e.model.free_dims.push_back({true, name, v});
  for (const auto& [name, view] : o.initializers) {
    SDX_ASSIGN_OR_RETURN(Value v, Value::borrow(view), "initializer '" + name + "'");
    SDX_ASSIGN_OR_RETURN(Value owned, v.owned(), "initializer '" + name + "'");
    const Datum& d = api::datum_of(owned);
    if (!d.is_tensor()) return invalid_argument("initializer '" + name + "' must be a dense tensor");
    if (!e.model.initializers.emplace(name, d.as_tensor()).second)
      return invalid_argument("initializer '" + name + "' is supplied twice");
  }
  for (const auto& [location, bytes] : o.external_files)
    if (!e.files.emplace(location, bytes).second)
      return invalid_argument("external file '" + location + "' is supplied twice");
  return e;
}

}  // namespace

Result<Session> Session::load(const std::string& path, const SessionOptions& options, const ModelOverrides& overrides) {
  SDX_ASSIGN_OR_RETURN(api::LoadEdits edits, load_edits(overrides), "");
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s,
                       api::load_session_file(path, api::engine_options(options), &edits), "");
  return SessionAccess::make(std::move(s));
}

Result<Session> Session::load_bytes(std::string_view bytes, const SessionOptions& options,
                                    const ModelOverrides& overrides) {
  SDX_ASSIGN_OR_RETURN(api::LoadEdits edits, load_edits(overrides), "");
  SDX_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s,
                       api::load_session_bytes(std::string(bytes), api::engine_options(options), &edits), "");
  return SessionAccess::make(std::move(s));
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }

namespace {
int64_t initializer_bytes(const ir::Graph& g) {
  int64_t total = 0;
  for (const ir::Value* v : g.initializers()) total += static_cast<int64_t>(v->initializer().nbytes());
  for (const auto& node : g.nodes())
    for (const ir::Graph* body : node->subgraphs()) total += initializer_bytes(*body);
  return total;
}
}  // namespace

int64_t Session::weight_bytes() const { return initializer_bytes(*impl_->session->model().graph); }

int Session::input_index(std::string_view name) const {
  for (size_t i = 0; i < impl_->inputs.size(); ++i)
    if (impl_->inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

int Session::output_index(std::string_view name) const {
  for (size_t i = 0; i < impl_->outputs.size(); ++i)
    if (impl_->outputs[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<LoopReport> Session::loop_reports() const {
  std::vector<LoopReport> out;
  for (const analysis::LoopReport& r : impl_->session->loops().reports())
    out.push_back({r.node, r.iterations, r.stopped_by, analysis::termination_verdict_name(r.termination.verdict),
                   r.describe(), r.to_json()});
  return out;
}

void Session::clear_loop_reports() const { impl_->session->loops().clear(); }

bool Session::has_value(std::string_view name) const {
  return impl_->session->model().graph->find_value(std::string(name)) != nullptr;
}

Result<std::vector<Value>> Session::run(const Feeds& feeds, const std::vector<std::string>& output_names,
                                        RunReport* report, const std::atomic<bool>* terminate) const {
  runtime::TerminateScope stop(terminate);
  std::vector<std::pair<std::string, Datum>> cfeeds;
  cfeeds.reserve(feeds.size());
  for (const auto& [name, v] : feeds) cfeeds.emplace_back(name, api::datum_of(v));
  runtime::ExecutionReport rep;
  SDX_ASSIGN_OR_RETURN(std::vector<Datum> outs,
                       impl_->session->run(cfeeds, output_names, nullptr, report ? &rep : nullptr), "");
  if (report) *report = api::public_report(rep);
  std::vector<Value> result;
  result.reserve(outs.size());
  for (Datum& d : outs) result.push_back(api::value_of(std::move(d)));
  return result;
}

std::unique_ptr<RunContext> Session::create_context() const {
  return std::unique_ptr<RunContext>(new RunContext(std::make_unique<RunContext::Impl>(
      RunContext::Impl{impl_->session->create_context()})));
}

std::unique_ptr<RunContext> Session::acquire_context() const {
  if (RunContext* c = impl_->cached.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<RunContext>(c);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->overflow.empty()) {
      std::unique_ptr<RunContext> c = std::move(impl_->overflow.back());
      impl_->overflow.pop_back();
      return c;
    }
  }
  return create_context();
}

void Session::release_context(std::unique_ptr<RunContext> ctx) const {
  if (!ctx) return;
  ctx->impl_->terminate = nullptr;  // the flag was its last user's
  RunContext* expected = nullptr;
  if (impl_->cached.compare_exchange_strong(expected, ctx.get(), std::memory_order_release,
                                            std::memory_order_relaxed)) {
    ctx.release();
    return;
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->overflow.push_back(std::move(ctx));
}

Status Session::run(RunContext& ctx, const TensorView* inputs, size_t num_inputs, const std::vector<int>& outputs,
                    RunReport* report) const {
  runtime::TerminateScope stop(ctx.impl_->terminate);
  if (!report) return impl_->session->run(*ctx.impl_->ctx, inputs, num_inputs, outputs, nullptr);
  runtime::ExecutionReport rep;
  Status s = impl_->session->run(*ctx.impl_->ctx, inputs, num_inputs, outputs, &rep);
  if (s.is_ok()) *report = api::public_report(rep);
  return s;
}

void Session::copy_outputs(const RunContext& ctx, void* const* dst) const {
  const runtime::Context& c = *ctx.impl_->ctx;
  const size_t n = c.num_outputs();
  size_t total = 0;
  for (size_t i = 0; i < n; ++i)
    if (dst[i]) total += c.output(i).as_tensor().nbytes();
  cpu::ScopedThreadPool bind_threads(impl_->session->thread_pool());
  auto copy = [&](size_t i) {
    if (dst[i]) cpu::parallel_copy(dst[i], c.output(i).as_tensor().raw_data(), c.output(i).as_tensor().nbytes());
  };
  if (total >= cpu::kParallelCopyMinBytes && n > 1) {
    cpu::parallel_for(static_cast<int64_t>(n), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) copy(static_cast<size_t>(i));
    });
  } else {
    for (size_t i = 0; i < n; ++i) copy(i);
  }
}

Status Session::freeze_shapes(RunContext& ctx) const { return impl_->session->freeze_shapes(*ctx.impl_->ctx); }

Status Session::set_variable(RunContext& ctx, const std::string& name, const TensorView& value) const {
  SDX_ASSIGN_OR_RETURN(Shape shape, Shape::make(std::vector<int64_t>(value.dims, value.dims + value.rank)),
                       "variable '" + name + "'");
  if (shape.numel() > 0 && !value.data) return invalid_argument("variable '" + name + "': data is NULL");
  // Borrowed for the call only: set_variable copies the values.
  const Tensor t = Tensor::borrow(value.dtype, std::move(shape), const_cast<void*>(value.data));
  return impl_->session->set_variable(*ctx.impl_->ctx, name, t);
}

Result<std::string> compile_bundle(const std::string& model_bytes, const SessionOptions& options,
                                   const std::vector<NamedViews>& calls) {
  return api::compile_bundle(model_bytes, api::engine_options(options), calls);
}

}  // namespace sdx
