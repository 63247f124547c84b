#include "runtime/debugger.h"

namespace sdx::runtime {
namespace {

class BreakpointObserver final : public StepObserver {
 public:
  BreakpointObserver(const plan::Plan& plan, const std::set<int>& slots, const Debugger::Callback& cb)
      : plan_(plan), slots_(slots), cb_(cb) {}
  void on_step(int step, const ir::Node& node, const Frame& frame) override {
    for (int slot : plan_.steps()[static_cast<size_t>(step)].outputs) {
      if (slot < 0 || !slots_.count(slot)) continue;
      const ir::Value* v = plan_.slots()[static_cast<size_t>(slot)].value;
      BreakpointHit hit;
      hit.slot = slot;
      hit.step = step;
      hit.name = &v->name();
      hit.op = &node.op_type();
      hit.node = &node.name();
      hit.value = &frame.slots[static_cast<size_t>(v->index())];
      cb_(hit);
    }
  }

 private:
  const plan::Plan& plan_;
  const std::set<int>& slots_;
  const Debugger::Callback& cb_;
};

}  // namespace

Status Debugger::break_at_slot(int slot) {
  const auto& slots = session_.plan().slots();
  if (slot < 0 || slot >= static_cast<int>(slots.size()))
    return invalid_argument("no slot " + std::to_string(slot) + ": the plan has slots 0.." +
                            std::to_string(static_cast<int64_t>(slots.size()) - 1));
  const plan::Slot& s = slots[static_cast<size_t>(slot)];
  if (s.producer_step < 0)
    return invalid_argument("slot " + std::to_string(slot) + " ('" + s.value->name() +
                            "') is a graph input or initializer: breakpoints fire after the step that produces a value");
  slots_.insert(slot);
  return Status::ok();
}

Status Debugger::break_at_value(const std::string& name) {
  const auto& slots = session_.plan().slots();
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].value && slots[i].value->name() == name) return break_at_slot(static_cast<int>(i));
  return not_found("the plan has no value named '" + name +
                   "' (the optimizer may have fused it away: `sdx inspect --plan` lists the slots, "
                   "SDX_OPTIMIZER_ENABLED=0 keeps the original graph)");
}

Result<std::vector<Datum>> Debugger::run(const std::vector<std::pair<std::string, Datum>>& feeds,
                                         const Callback& callback) const {
  BreakpointObserver observer(session_.plan(), slots_, callback);
  return session_.run(feeds, {}, &observer);
}

}  // namespace sdx::runtime
