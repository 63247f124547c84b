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
    // Relaxed counters: statistics for the churn check, which only ever turns the flag on.
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

 private:
  std::unique_ptr<Session> session_;
  std::vector<const ir::Value*> captured_;
  std::vector<int> assumed_tensors_;
  std::string where_;
  mutable std::atomic<bool> interpreted_{false};
  mutable std::atomic<uint64_t> calls_{0};
  mutable std::atomic<uint64_t> new_plans_{0};
};

}  // namespace

std::unique_ptr<SubgraphBody> BodySessionCompiler::compile(const ir::Graph& body, const ir::Node& owner) {
  const std::string where = "subgraph '" + body.name() + "' of " + owner.describe();
  auto interpreted = [&](const Status& why) -> std::unique_ptr<SubgraphBody> {
    interpreted_.push_back(where + ": " + why.message());
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
  Result<std::unique_ptr<Session>> session = Session::create_body(std::move(model), options);
  if (!session.is_ok()) return interpreted(session.status());
  for (const ir::Value* v : lifted.value().constants) constants_.insert(v);
  obs::log_for(options_.log_level, obs::LogSeverity::kVerbose, "plan", [&] {
    std::string inputs;
    for (const ir::Value* v : lifted.value().captured) inputs += " '" + v->name() + "' " + v->type().to_string();
    return where + " runs as a plan of its own; outer values fed per call:" + inputs + "; " +
           std::to_string(lifted.value().constants.size()) + " outer constants";
  });
  return std::make_unique<BodySession>(std::move(session).value(), std::move(lifted).value(), where);
}

}  // namespace sdx::runtime
