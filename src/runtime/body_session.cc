#include "runtime/body_session.h"

#include <atomic>
#include <optional>

#include "ir/lift_subgraph.h"
#include "obs/diagnostics.h"
#include "obs/log.h"
#include "runtime/session.h"

namespace sdx::runtime {
namespace {

// After this many calls, a body that needed a new plan on more than half of them goes back to the
// interpreter: each new input shape costs a warmup run and a capture, more than an interpreted run.
constexpr uint64_t kChurnWindow = 16;

class BodySession final : public SubgraphBody {
 public:
  BodySession(std::unique_ptr<Session> session, ir::LiftedBody lifted, std::string where)
      : session_(std::move(session)), captured_(std::move(lifted.captured)),
        assumed_tensors_(std::move(lifted.assumed_tensors)), where_(std::move(where)) {}

  Result<std::optional<std::vector<Datum>>> run(const Frame& parent, std::vector<Datum>& inputs) const override {
    // Relaxed: the flag publishes nothing; either path computes the same outputs.
    if (interpreted_.load(std::memory_order_relaxed)) return std::optional<std::vector<Datum>>();
    std::vector<const Datum*> by_input;
    by_input.reserve(inputs.size() + captured_.size());
    for (const Datum& d : inputs) {
      if (d.is_empty()) return std::optional<std::vector<Datum>>();  // an omitted input: the interpreter's case
      by_input.push_back(&d);
    }
    for (const ir::Value* v : captured_) {
      const Datum& d = parent.lookup(v);
      if (d.is_empty()) return std::optional<std::vector<Datum>>();  // an absent optional: the interpreter's case
      by_input.push_back(&d);
    }
    // An input of no declared type was lifted as a tensor: anything else is the interpreter's case.
    for (int i : assumed_tensors_)
      if (!by_input[static_cast<size_t>(i)]->is_tensor()) return std::optional<std::vector<Datum>>();
    ExecutionReport rep;
    SDX_ASSIGN_OR_RETURN(std::vector<Datum> out, session_->run_inputs(by_input, &rep), "");
    // Relaxed counters: statistics for the churn check, which only ever turns the flag on, and for
    // report(), which reads each on its own (a report taken during a call may be one call behind).
    if (rep.mode_used == ExecutionMode::kCpuReplay) replays_.fetch_add(1, std::memory_order_relaxed);
    captured_steps_.store(rep.captured_steps, std::memory_order_relaxed);
    gap_steps_.store(rep.gap_steps, std::memory_order_relaxed);
    last_fallback_.store(rep.fallback_reason, std::memory_order_relaxed);  // a static string or null
    const uint64_t calls = calls_.fetch_add(1, std::memory_order_relaxed) + 1;
    const uint64_t fresh = rep.call_count == 1 ? new_plans_.fetch_add(1, std::memory_order_relaxed) + 1
                                               : new_plans_.load(std::memory_order_relaxed);
    if (calls >= kChurnWindow && 2 * fresh > calls && !interpreted_.exchange(true, std::memory_order_relaxed)) {
      obs::log_for(session_->options().log_level, obs::LogSeverity::kInfo, "plan", [&] {
        return where_ + ": input shapes changed on " + std::to_string(fresh) + " of " + std::to_string(calls) +
               " calls; interpreting it from now on";
      });
      obs::Diagnostics::global().record_lazy(obs::DiagCategory::kFallback, obs::DiagLevel::kSummary,
                                             "SUBGRAPH_INTERPRETED", [&] {
                                               return where_ + ": input shapes changed on " + std::to_string(fresh) +
                                                      " of " + std::to_string(calls) + " calls";
                                             });
    }
    return std::optional<std::vector<Datum>>(std::move(out));
  }

  // `r` holds the body's names; this adds its state and counters, and the bodies nested in it.
  BodyReport report(BodyReport r) const {
    const uint64_t calls = calls_.load(std::memory_order_relaxed);
    const uint64_t fresh = new_plans_.load(std::memory_order_relaxed);
    r.plan = !interpreted_.load(std::memory_order_relaxed);
    if (!r.plan)
      r.why = "input shapes changed on " + std::to_string(fresh) + " of " + std::to_string(calls) + " calls";
    r.calls = calls;
    r.replays = replays_.load(std::memory_order_relaxed);
    r.new_plans = fresh;
    r.captured_steps = captured_steps_.load(std::memory_order_relaxed);
    r.gap_steps = gap_steps_.load(std::memory_order_relaxed);
    const char* fallback = last_fallback_.load(std::memory_order_relaxed);
    r.last_fallback = fallback ? fallback : "";
    r.nested = session_->body_reports();
    for (const auto& [pass, n] : session_->optimization().rewrites_per_pass)
      if (n > 0) r.rewrites.emplace_back(pass, n);
    return r;
  }

 private:
  std::unique_ptr<Session> session_;
  std::vector<const ir::Value*> captured_;
  std::vector<int> assumed_tensors_;
  std::string where_;
  mutable std::atomic<bool> interpreted_{false};
  mutable std::atomic<uint64_t> calls_{0};
  mutable std::atomic<uint64_t> new_plans_{0};
  mutable std::atomic<uint64_t> replays_{0};
  mutable std::atomic<int32_t> captured_steps_{0}, gap_steps_{0};
  mutable std::atomic<const char*> last_fallback_{nullptr};
};

// The report's names: the body, the owner's attribute that holds it, the owner.
BodyReport names_of(const ir::Graph& body, const ir::Node& owner) {
  BodyReport r;
  r.body = body.name();
  r.owner = owner.name();
  r.owner_op = owner.op_type();
  for (const ir::Attribute& a : owner.attributes())
    if (a.g.get() == &body) r.attribute = a.name;
  return r;
}

}  // namespace

std::unique_ptr<SubgraphBody> BodySessionCompiler::compile(const ir::Graph& body, const ir::Node& owner) {
  const std::string where = "subgraph '" + body.name() + "' of " + owner.describe();
  auto interpreted = [&](const Status& why) -> std::unique_ptr<SubgraphBody> {
    interpreted_.push_back(where + ": " + why.message());
    BodyReport r = names_of(body, owner);
    r.why = why.message();
    reporters_.push_back([r] { return r; });
    obs::log_for(options_.log_level, obs::LogSeverity::kInfo, "plan",
                 [&] { return where + " stays interpreted: " + why.message(); });
    obs::Diagnostics::global().record_lazy(obs::DiagCategory::kFallback, obs::DiagLevel::kSummary,
                                           "SUBGRAPH_INTERPRETED", [&] { return where + ": " + why.message(); });
    return nullptr;
  };
  Result<ir::LiftedBody> lifted = ir::lift_subgraph(body);
  if (!lifted.is_ok()) return interpreted(lifted.status());
  ir::Model model;
  model.graph = lifted.value().graph;
  model.opsets = parent_.opsets;
  model.ir_version = parent_.ir_version;
  model.producer = parent_.producer;
  model.producer_version = parent_.producer_version;
  SessionOptions options = options_;
  options.jit.enabled = false;
  options.disk_plan_cache = false;
  Result<std::unique_ptr<Session>> session = Session::create_body(std::move(model), options, loops_);
  if (!session.is_ok()) return interpreted(session.status());
  for (const ir::Value* v : lifted.value().constants) constants_.insert(v);
  obs::log_for(options_.log_level, obs::LogSeverity::kVerbose, "plan", [&] {
    std::string inputs;
    for (const ir::Value* v : lifted.value().captured) inputs += " '" + v->name() + "' " + v->type().to_string();
    return where + " runs as a plan of its own; outer values fed per call:" + inputs + "; " +
           std::to_string(lifted.value().constants.size()) + " outer constants";
  });
  auto compiled = std::make_unique<BodySession>(std::move(session).value(), std::move(lifted).value(), where);
  reporters_.push_back([b = compiled.get(), names = names_of(body, owner)] { return b->report(names); });
  return compiled;
}

}  // namespace sdx::runtime
