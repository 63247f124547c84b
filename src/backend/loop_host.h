// LoopHost: what a session lends its control-flow kernels about loops: its loop monitor (the policy, with
// the guards and the analysis switch, and where loop reports go; analysis/loop_monitor.h). A KernelContext
// that runs inside a session also implements LoopHost (runtime/graph_executor.cc's interpreter context);
// the Loop kernel asks for it once per execution. A context outside any session (the optimizer's constant
// folding) has none, and the kernel falls back on the default policy.
//
// An interface beside KernelContext rather than a method of it, so that adding it rebuilt no kernel.
//
//   const analysis::LoopMonitor* m = backend::loop_monitor(ctx);          // null: no session
//   const analysis::LoopPolicy& policy = m ? m->policy() : kDefaultPolicy;
#pragma once

#include "analysis/loop_monitor.h"
#include "backend/kernel.h"

namespace sdx::backend {

class LoopHost {
 public:
  virtual ~LoopHost() = default;
  // Null when the session has none.
  virtual analysis::LoopMonitor* loop_monitor() const = 0;
};

// The monitor of the session ctx runs in, or null.
inline analysis::LoopMonitor* loop_monitor(KernelContext& ctx) {
  const LoopHost* host = dynamic_cast<const LoopHost*>(&ctx);
  return host ? host->loop_monitor() : nullptr;
}

}  // namespace sdx::backend
