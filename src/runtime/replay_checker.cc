#include "runtime/replay_checker.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include "backend/cpu/threading/thread_pool.h"
#include "runtime/context.h"
#include "runtime/plan_entry.h"
#include "runtime/replay.h"

namespace sdx::runtime {
namespace {

// Keeps a copy of every value each step writes (the reference run).
class Recorder final : public StepObserver {
 public:
  explicit Recorder(const plan::Plan& plan) : plan_(plan) {}
  void on_step(int step, const ir::Node&, const Frame& frame) override {
    for (int slot : plan_.steps()[static_cast<size_t>(step)].outputs) {
      if (slot < 0) continue;
      const Datum& d = frame.slots[static_cast<size_t>(plan_.slots()[static_cast<size_t>(slot)].value->index())];
      if (!d.is_tensor()) continue;
      auto copy = d.as_tensor().clone();
      if (copy.is_ok()) values_[slot] = std::move(copy).value();
    }
  }
  const Tensor* find(int slot) const {
    auto it = values_.find(slot);
    return it == values_.end() ? nullptr : &it->second;
  }

 private:
  const plan::Plan& plan_;
  std::unordered_map<int, Tensor> values_;
};

template <typename T>
bool finite_all(const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(static_cast<double>(p[i]))) return false;
  return true;
}

bool all_finite(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32: return finite_all<float>(t);
    case DType::kFloat64: return finite_all<double>(t);
    default: return true;  // integers and the rest; float16 etc. compare bytewise below
  }
}

// Largest absolute difference and the first index differing by more than atol (-1 when none).
// Non-float types compare bytewise (any difference counts as 1).
std::pair<double, int64_t> compare(const Tensor& a, const Tensor& b, double atol) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return {INFINITY, 0};
  auto floats = [&](auto tag) -> std::pair<double, int64_t> {
    using T = decltype(tag);
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    double worst = 0;
    int64_t first = -1;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const bool same_bits = std::memcmp(&x[i], &y[i], sizeof(T)) == 0;
      if (same_bits) continue;
      const double d = std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i]));
      const double dd = std::isnan(d) ? INFINITY : d;
      worst = std::max(worst, dd);
      if (first < 0 && (atol == 0 || !(dd <= atol))) first = i;
    }
    return {worst, first};
  };
  if (a.dtype() == DType::kFloat32) return floats(float{});
  if (a.dtype() == DType::kFloat64) return floats(double{});
  if (!dtype_is_byte_addressable(a.dtype())) return {0, -1};
  if (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0) return {0, -1};
  const auto* x = static_cast<const unsigned char*>(a.raw_data());
  const auto* y = static_cast<const unsigned char*>(b.raw_data());
  const size_t es = a.nbytes() / static_cast<size_t>(std::max<int64_t>(a.numel(), 1));
  for (size_t i = 0; i < a.nbytes(); ++i)
    if (x[i] != y[i]) return {1, static_cast<int64_t>(i / std::max<size_t>(es, 1))};
  return {0, -1};
}

SlotLocation locate(const plan::Plan& plan, int slot) {
  SlotLocation l;
  l.slot = slot;
  const int step = plan.slots()[static_cast<size_t>(slot)].producer_step;
  l.step = step;
  l.value = plan.slots()[static_cast<size_t>(slot)].value->name();
  const ir::Node* n = plan.steps()[static_cast<size_t>(step)].node;
  l.op = n->op_type();
  l.node = n->name();
  return l;
}

std::string where(const SlotLocation& l) {
  return "slot " + std::to_string(l.slot) + " '" + l.value + "' (" + l.op + " '" + l.node + "', step " +
         std::to_string(l.step) + ")";
}

}  // namespace

std::string ReplayCheck::summary() const {
  if (!replayed) return "not checked: the plan did not replay (" + not_replayed_why + ")";
  std::string s;
  if (diverged) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "max abs difference %.6g, first at element %lld", max_abs_diff,
                  static_cast<long long>(first_index));
    s = "replay diverges first at " + where(first_divergence) + ": " + buf;
  } else {
    s = "replay matches slot by slot";
  }
  s += " (" + std::to_string(compared) + " values compared, " + std::to_string(skipped) + " skipped)";
  if (nonfinite)
    s += "; first NaN/Inf in replay at " + where(first_nonfinite) +
         (reference_nonfinite ? " (the reference has it too)" : " (the reference does not)");
  return s;
}

Result<ReplayCheck> check_replay(const Session& session, const std::vector<std::pair<std::string, Datum>>& feeds,
                                 double atol) {
  const plan::Plan& plan = session.plan();
  // Positional arguments in input order.
  std::vector<TensorArg> args(session.inputs().size());
  std::vector<bool> given(args.size(), false);
  for (const auto& [name, d] : feeds) {
    const int i = session.input_index(name);
    if (i < 0) return invalid_argument("unknown input name '" + name + "'");
    if (!d.is_tensor()) return invalid_argument("input '" + name + "': the replay checker takes plain tensors");
    const Tensor& t = d.as_tensor();
    args[static_cast<size_t>(i)] = {t.dtype(), t.shape().dims().data(), t.rank(), t.raw_data()};
    given[static_cast<size_t>(i)] = true;
  }
  for (size_t i = 0; i < given.size(); ++i)
    if (!given[i]) return invalid_argument("missing input '" + session.inputs()[i].name + "'");

  Recorder reference(plan);
  SDX_RETURN_IF_ERROR(session.run(feeds, {}, &reference).status(), "the slot-by-slot reference run");

  ReplayCheck out;
  auto ctx = session.create_context();
  ExecutionReport rep;
  for (int i = 0; i < session.options().warmup_runs + 3 && ctx->phase() != PlanPhase::kReplaying; ++i)
    SDX_RETURN_IF_ERROR(session.run(*ctx, args.data(), args.size(), {}, &rep), "driving the plan to REPLAYING");
  const PlanEntry* e = ctx->current();
  if (ctx->phase() != PlanPhase::kReplaying || !e || !e->replay()) {
    out.not_replayed_why = rep.fallback_reason ? rep.fallback_reason : "it stayed in " + std::string(plan_phase_name(ctx->phase()));
    return out;
  }
  out.replayed = true;
  const plan::Plan& rplan = *e->plan;
  // Replay slots map to the reference's by value (the replayed plan may order steps differently).
  std::unordered_map<const ir::Value*, int> ref_slot;
  for (size_t i = 0; i < plan.slots().size(); ++i) ref_slot[plan.slots()[i].value] = static_cast<int>(i);
  auto observe = [&](int first, int last, const Frame& frame) {
    for (int step = first; step <= last; ++step)
      for (int slot : rplan.steps()[static_cast<size_t>(step)].outputs) {
        if (slot < 0) continue;
        const plan::Slot& s = rplan.slots()[static_cast<size_t>(slot)];
        // Inside a fused segment only the values read after it (or requested) exist.
        if (last > first && !(s.last > last || s.requested_output)) {
          ++out.skipped;
          continue;
        }
        const Datum& d = frame.slots[static_cast<size_t>(s.value->index())];
        auto it = ref_slot.find(s.value);
        const Tensor* ref = it == ref_slot.end() ? nullptr : reference.find(it->second);
        if (!d.is_tensor() || !ref) {
          ++out.skipped;
          continue;
        }
        ++out.compared;
        const Tensor& t = d.as_tensor();
        if (!out.nonfinite && !all_finite(t)) {
          out.nonfinite = true;
          out.first_nonfinite = locate(plan, it->second);
          out.reference_nonfinite = !all_finite(*ref);
        }
        if (out.diverged) continue;
        auto [worst, first_bad] = compare(t, *ref, atol);
        if (first_bad >= 0) {
          out.diverged = true;
          out.first_divergence = locate(plan, it->second);
          out.max_abs_diff = worst;
          out.first_index = first_bad;
        }
      }
  };
  cpu::ScopedThreadPool bind_threads(session.thread_pool());
  bool diverged = false;
  SDX_RETURN_IF_ERROR(e->replay()->replay_observed(args.data(), observe, &diverged), "the observed replay");
  if (diverged) {
    out.replayed = false;
    out.not_replayed_why = "these inputs left the captured plan (a shape changed): it reran slot by slot";
  }
  return out;
}

}  // namespace sdx::runtime
