// Loop: runs `body` while the trip count and condition allow, threading
// loop-carried values through iterations and stacking scan outputs.
//   body(iter_num: int64 scalar, cond: bool scalar, carried...) -> (cond, carried..., scan_outputs...)
//
// The session's loop policy (analysis/loop_policy.h, reached through backend/loop_host.h) guards every
// execution: a Loop that would run more than max_loop_iterations iterations, or longer than max_loop_seconds,
// stops with an error instead of hanging the process. With loop_analysis on, an analysis::LoopRecorder
// samples the carried values and the condition, and the report (each value's evolution, the termination
// prediction) goes to the session's monitor at the loop's end, and into the guard's error when one fires.
#include <chrono>
#include <optional>

#include "analysis/loop_recorder.h"
#include "backend/cpu/tensor/tensor_copy.h"
#include "backend/kernel_registry.h"
#include "backend/loop_host.h"
#include "obs/diagnostics.h"

namespace sdx::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The guard's error: what stopped the loop, and with the analysis on, the termination report (which
// variable keeps the loop going, and how it evolves). The report also goes to the session's monitor.
Status guard_error(const std::string& node, int64_t iterations, const std::string& guard, const std::string& limit,
                   const std::optional<analysis::LoopRecorder>& rec, analysis::LoopMonitor* monitor, double seconds,
                   bool trip_left) {
  std::string msg = "Loop '" + node + "' stopped after " + std::to_string(iterations) + " iterations (" + guard +
                    " = " + limit + ")";
  if (!rec) {
    msg += std::string(trip_left ? " before its trip count ran out" : " with its condition still true") +
           "; set loop_analysis=1 (SDX_LOOP_ANALYSIS=1) for a report of which variable keeps it going and how it "
           "evolves";
    return resource_exhausted(msg);
  }
  analysis::LoopReport r = rec->finish(node, iterations, guard, seconds);
  msg += ": " + r.summary();
  if (r.termination.root_cause)
    msg += "; " + r.termination.root_cause->name + " keeps the condition `" + r.condition + "` true: " +
           r.termination.root_cause->evolution.describe();
  obs::Diagnostics::global().record_lazy(obs::DiagCategory::kExecute, obs::DiagLevel::kSummary, "LOOP_REPORT",
                                         [&] { return r.to_json(); });
  if (monitor) monitor->add(std::move(r));
  return resource_exhausted(msg);
}

class LoopKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    const ir::Attribute* b = node.attr("body");
    if (!b || !b->g) return invalid_argument("Loop needs a graph attribute 'body'");
    body_ = b->g.get();
    const int carried = node.num_inputs() - 2;
    if (carried < 0) return invalid_argument("Loop needs at least the inputs M and cond");
    if (static_cast<int>(body_->inputs().size()) != carried + 2)
      return invalid_argument("body takes " + std::to_string(body_->inputs().size()) + " inputs; expected " +
                              std::to_string(carried + 2) + " (iteration, condition and loop-carried values)");
    if (static_cast<int>(body_->outputs().size()) < carried + 1)
      return invalid_argument("body must produce the condition and " + std::to_string(carried) + " loop-carried values");
    // A carried value keeps its type across iterations (ONNX: the body's carried output has its input's type):
    // a body that declares another is refused here, before any run.
    for (int i = 0; i < carried; ++i) {
      const ir::Value* in = body_->inputs()[static_cast<size_t>(2 + i)];
      const ir::Value* out = body_->outputs()[static_cast<size_t>(1 + i)];
      const ir::TypeInfo& a = in->type();
      const ir::TypeInfo& b = out->type();
      const bool both_tensors = a.kind == ir::TypeInfo::Kind::kTensor && b.kind == ir::TypeInfo::Kind::kTensor;
      if (both_tensors && a.elem != DType::kUndefined && b.elem != DType::kUndefined && a.elem != b.elem)
        return invalid_argument("body's loop-carried value '" + in->name() + "' is " + a.to_string() +
                                " but the body gives back '" + out->name() + "' as " + b.to_string() +
                                " (a carried value keeps its type across iterations)");
    }
    condition_ = analysis::analyze_loop_condition(*body_);
    for (int i = 0; i < carried; ++i) carried_names_.push_back(body_->inputs()[static_cast<size_t>(2 + i)]->name());
    node_name_ = node.name().empty() ? "Loop" : node.name();
    return Status::ok();
  }

  Status run(backend::KernelContext& ctx) const override {
    int64_t trip = -1;
    if (ctx.has_input(0)) {
      const Tensor& m = ctx.input(0);
      if (m.numel() != 1 || m.dtype() != DType::kInt64) return invalid_argument("M must be an int64 scalar, got " + m.type_string());
      trip = *m.data<int64_t>();
      if (trip < 0)
        return invalid_argument("the trip count M is " + std::to_string(trip) +
                                "; it must be >= 0 (leave M empty for a loop bounded by its condition alone)");
    }
    bool cond = true;
    if (ctx.has_input(1)) {
      const Tensor& c = ctx.input(1);
      if (c.numel() != 1 || c.dtype() != DType::kBool) return invalid_argument("cond must be a bool scalar, got " + c.type_string());
      cond = *c.data<uint8_t>() != 0;
    }
    const int carried = ctx.num_inputs() - 2;
    const int scans = static_cast<int>(body_->outputs().size()) - 1 - carried;
    std::vector<Datum> state;
    for (int i = 0; i < carried; ++i) state.push_back(ctx.input_datum(2 + i));
    std::vector<std::vector<Tensor>> scan_items(static_cast<size_t>(scans));
    std::vector<std::vector<Datum>> scan_seq_items(static_cast<size_t>(scans));
    static const analysis::LoopPolicy kDefaultPolicy;  // immutable: a context outside any session
    analysis::LoopMonitor* monitor = backend::loop_monitor(ctx);
    const analysis::LoopPolicy& policy = monitor ? monitor->policy() : kDefaultPolicy;
    std::optional<analysis::LoopRecorder> rec;
    if (policy.analysis)
      rec.emplace(policy, condition_, carried_names_, trip >= 0 ? std::optional<int64_t>(trip) : std::nullopt);
    const bool timed = rec || policy.max_seconds > 0;
    const Clock::time_point t0 = timed ? Clock::now() : Clock::time_point();
    int64_t it = 0;
    for (; (trip < 0 || it < trip) && cond; ++it) {
      if (it >= policy.max_iterations) [[unlikely]]
        return guard_error(node_name_, it, "max_loop_iterations", std::to_string(policy.max_iterations), rec, monitor,
                           timed ? seconds_since(t0) : 0, trip >= 0);
      if (policy.max_seconds > 0 && it > 0) {
        const double elapsed = seconds_since(t0);
        if (elapsed > policy.max_seconds) [[unlikely]]
          return guard_error(node_name_, it, "max_loop_seconds", std::to_string(policy.max_seconds) + " s", rec,
                             monitor, elapsed, trip >= 0);
      }
      std::vector<Datum> in;
      in.reserve(static_cast<size_t>(carried) + 2);
      SDX_ASSIGN_OR_RETURN(Tensor iter, Tensor::allocate(DType::kInt64, Shape{}), "");
      *iter.data<int64_t>() = it;
      SDX_ASSIGN_OR_RETURN(Tensor c, Tensor::allocate(DType::kBool, Shape{}), "");
      *c.data<uint8_t>() = cond ? 1 : 0;
      in.push_back(Datum::tensor(iter));
      in.push_back(Datum::tensor(c));
      for (const Datum& d : state) in.push_back(d);
      SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, ctx.run_subgraph(*body_, std::move(in)), "iteration " + std::to_string(it));
      const Datum& nc = out[0];
      if (!nc.is_tensor() || nc.as_tensor().numel() != 1 || nc.as_tensor().dtype() != DType::kBool)
        return invalid_argument("body's condition output must be a bool scalar");
      cond = *nc.as_tensor().data<uint8_t>() != 0;
      for (int i = 0; i < carried; ++i) {
        Datum& next = out[static_cast<size_t>(1 + i)];
        Datum& prev = state[static_cast<size_t>(i)];
        // Undeclared types are checked here: the value the body gives back must have the one it was given.
        if (next.is_tensor() && prev.is_tensor() && next.as_tensor().dtype() != prev.as_tensor().dtype())
          return invalid_argument("iteration " + std::to_string(it) + ": body's loop-carried value '" +
                                  carried_names_[static_cast<size_t>(i)] + "' came in as " +
                                  prev.as_tensor().type_string() + " but went out as " +
                                  next.as_tensor().type_string() + " (a carried value keeps its type)");
        prev = std::move(next);
      }
      for (int i = 0; i < scans; ++i) {
        Datum& d = out[static_cast<size_t>(1 + carried + i)];
        if (!d.is_tensor()) return unimplemented("Loop scan outputs must be tensors");
        scan_items[static_cast<size_t>(i)].push_back(d.as_tensor());
      }
      if (rec && rec->wants(it)) rec->record(it, state, cond);
    }
    if (rec) {
      analysis::LoopReport r = rec->finish(node_name_, it, "", seconds_since(t0));
      obs::Diagnostics::global().record_lazy(obs::DiagCategory::kExecute, obs::DiagLevel::kSummary, "LOOP_REPORT",
                                             [&] { return r.to_json(); });
      if (monitor) monitor->add(std::move(r));
    }
    for (int i = 0; i < carried; ++i) SDX_RETURN_IF_ERROR(ctx.set_output_datum(i, state[static_cast<size_t>(i)]), "");
    for (int i = 0; i < scans; ++i) {
      const ir::Value* bo = body_->outputs()[static_cast<size_t>(1 + carried + i)];
      DType elem = bo->type().elem == DType::kUndefined ? DType::kFloat32 : bo->type().elem;
      SDX_ASSIGN_OR_RETURN(Tensor stacked, stack_tensors(scan_items[static_cast<size_t>(i)], elem), "scan output " + std::to_string(i));
      SDX_RETURN_IF_ERROR(ctx.set_output(carried + i, std::move(stacked)), "");
    }
    return Status::ok();
  }

 private:
  const ir::Graph* body_ = nullptr;
  analysis::LoopCondition condition_;       // how the condition reads the carried values (for the analysis)
  std::vector<std::string> carried_names_;  // the body's inputs 2...
  std::string node_name_;
};

const backend::KernelRegistrar kLoop({"Loop", "", 1, backend::kAnyOpset, backend::kernel_factory<LoopKernel>()});

}  // namespace
}  // namespace sdx::cpu
