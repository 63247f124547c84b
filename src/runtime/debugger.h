// Debugger (the DSP document's DspDebugger): run a model with breakpoints on plan slots.
//
//   Debugger dbg(*session);
//   SDX_RETURN_IF_ERROR(dbg.break_at_value("encoder/attn/Softmax_out"), "");
//   SDX_RETURN_IF_ERROR(dbg.break_at_slot(42), "");
//   SDX_ASSIGN_OR_RETURN(auto outputs, dbg.run(feeds, [](const BreakpointHit& h) {
//     std::cout << h.slot << " " << h.name << " (" << h.op << ") " << h.value.as_tensor().type_string() << "\n";
//   }), "");
//
// A breakpoint fires right after the step that produces its slot, with the value as that step wrote it.
// Running under the debugger forces slot by slot: a replayed plan reuses buffers, so an intermediate
// no longer exists once a later step has run (see replay_checker.h for comparing replay with slot by
// slot). Slot indices are the plan's, as `sdx inspect --plan` and Session::introspect report them.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"

namespace sdx::runtime {

struct BreakpointHit {
  int slot = -1;
  int step = -1;
  const std::string* name = nullptr;  // the value's name
  const std::string* op = nullptr;    // the producing node's op type
  const std::string* node = nullptr;  // the producing node's name
  const Datum* value = nullptr;       // valid during the callback only
};

class Debugger {
 public:
  explicit Debugger(const Session& session) : session_(session) {}

  // A breakpoint on plan slot `slot`; invalid_argument when out of range or not produced by a step
  // (graph inputs and initializers are known before the run).
  Status break_at_slot(int slot);
  // A breakpoint on the slot of the value named `name`; not_found when the plan has none.
  Status break_at_value(const std::string& name);
  void clear() { slots_.clear(); }
  const std::set<int>& breakpoints() const { return slots_; }

  using Callback = std::function<void(const BreakpointHit&)>;
  // Runs once, slot by slot over the full plan, calling `callback` at each breakpoint in execution
  // order; returns every output.
  Result<std::vector<Datum>> run(const std::vector<std::pair<std::string, Datum>>& feeds, const Callback& callback) const;

 private:
  const Session& session_;
  std::set<int> slots_;
};

}  // namespace sdx::runtime
