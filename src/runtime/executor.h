// Executor: the one owner of the plan lifecycle of a session (the DSP document's phases):
//
//   WARMUP         run slot by slot, recording every slot's type and shape (warmup_runs calls);
//   SHAPES_FROZEN  when the signature comes again: lay out memory (plan/memory_layout.h), allocate it
//                  once from the plan cache's pool, build the CPU_JIT segments (a signature seen once
//                  never gets here: a decode loop's growing KV length costs no frozen memory);
//   CAPTURED       bind every step into a ReplayHandle (runtime/replay.h) while running the call (the
//                  call that froze);
//   REPLAYING      copy the inputs in and walk the bound calls.
//
// with its fallbacks (a plan that cannot be captured runs slot by slot in its frozen memory; a replay
// whose eager step changed a shape stops replaying), the reason for each, the diagnostics each
// transition emits, and the execution report. Session checks a call's inputs, finds the context's
// PlanEntry and hands both here; the entry is the executor's state for that plan (the context owns
// it, the plan cache accounts for it).
//
//   Executor ex(config);
//   SDX_RETURN_IF_ERROR(ex.run(ctx, entry, args, outputs, &report), "");
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/execution_mode.h"
#include "runtime/execution_report.h"
#include "runtime/graph_executor.h"
#include "runtime/plan_entry.h"
#include "runtime/shape_variety.h"
#include "runtime/tensor_arg.h"
#include "runtime/value_info.h"

namespace sdx::jit {
class JitEngine;
}
namespace sdx::opt {
struct OptimizationReport;
}
namespace sdx::cpu {
class ThreadPool;
}

namespace sdx::runtime {

class Context;
class PlanCache;

class Executor {
 public:
  // What the executor needs of its session; every pointer outlives the executor.
  struct Config {
    const ir::Graph* graph = nullptr;
    const GraphExecutor* graph_executor = nullptr;
    const std::vector<ValueInfo>* inputs = nullptr;                  // the session's inputs()
    const std::vector<const ir::Value*>* input_values = nullptr;     // parallel to inputs
    ModeResolution mode;
    int warmup_runs = 1;
    PlanCache* cache = nullptr;
    jit::JitEngine* jit = nullptr;                       // null: CPU_JIT off
    cpu::ThreadPool* threads = nullptr;                  // null: one thread
    const opt::OptimizationReport* optimization = nullptr;
    // Called after a plan is frozen and captured (or found not capturable), on the calling thread.
    const std::function<void(const PlanEntry&)>* on_captured = nullptr;
    bool shape_buckets = false;  // the session pads inputs itself (SessionOptions::shape_buckets)
    // Called once, on the calling thread, when callers have brought ShapeVariety::kManySignatures signatures
    // whose dims differ: those dims (declared names, sizes seen); returns what the session did about them
    // (added to SHAPES_VARY). Null: nothing is done.
    const std::function<std::string(const ShapeVariety::Varied&)>* on_shapes_vary = nullptr;
    bool act_on_pressure = false;  // on_shapes_vary gets Varied::act once the cache evicts or passivates plans
  };
  explicit Executor(Config config) : c_(std::move(config)) {}

  const ModeResolution& mode() const { return c_.mode; }

  // One call on ctx's entry `e` for these (checked) inputs and requested outputs; results go to ctx.
  // t0: when the call began (its latency goes into the entry's statistics and the diagnostics).
  Status run(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
             std::chrono::steady_clock::time_point t0, ExecutionReport* report) const;
  // SLOT_BY_SLOT mode: the plan interpreted with fresh memory, no entry.
  Status run_slot_by_slot(Context& ctx, const plan::Plan& plan, const TensorArg* args, const std::vector<int>& outputs,
                          ExecutionReport* report) const;
  // WARMUP -> SHAPES_FROZEN now (sdxFreezeShapes, or after warmup_runs calls). args: the freezing call's
  // inputs, whose large ones at the warmup call's addresses are borrowed (read in place); null: none are.
  Status freeze(Context& ctx, PlanEntry& e, const TensorArg* args = nullptr) const;
  // Inputs of at least this many bytes may be borrowed.
  static constexpr int64_t kBorrowMinBytes = 64 * 1024;
  // Moves of borrowed inputs an entry follows (freezing again at the new address) before it copies for
  // good, unless it made at least kBorrowMoveCalls calls per move (a decode loop moves once per sequence).
  static constexpr int kMaxBorrowMoves = 4;
  static constexpr int64_t kBorrowMoveCalls = 8;
  // An entry holding a warmup record but no frozen memory (a bundle's seed, or kept after the plan cache
  // passivated it): frozen from the record and bound without running a step, so its next call replays.
  // args: this call's inputs, copied into the frozen input buffers; at_load: args only describe the
  // signature (no data; a bundle's plans bound when it loads), and the first replay copies the inputs.
  // Does nothing for other entries.
  Status freeze_recorded(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                         bool at_load = false) const;
  // Fills the mode fields every report carries.
  void fill_mode(ExecutionReport& r) const;

 private:
  // One slot-by-slot run: observer (warmup recorder) and planned memory optional.
  Status run_frame(const plan::Plan& plan, const TensorArg* args, const std::vector<int>& outputs, Context& ctx,
                   StepObserver* observer, const std::vector<Tensor>* planned) const;
  // The phases; each sets *fallback (why this call did not replay); replay_call sets *replayed.
  Status warmup_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                     const char** fallback) const;
  Status capture_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                      const char** fallback) const;
  Status replay_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                     const char** fallback, bool* replayed) const;
  // A borrowed input moved (or, aliased, an output is a view of one): freezes e again, borrowing at the new
  // addresses while moves are rare (never after an alias), and captures this call.
  Status unborrow_call(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs,
                       const char** fallback, bool aliased) const;
  void choose_borrowed(PlanEntry& e, const TensorArg* args) const;
  // A plan frozen from a record (bundle, disk plan cache): binds every step without running one, so this
  // call replays (SHAPES_FROZEN -> CAPTURED). Leaves e frozen when a step must run to be captured.
  Status bind_recorded(Context& ctx, PlanEntry& e, const TensorArg* args, const std::vector<int>& outputs) const;
  // Makes h e's replay handle (CAPTURED), with its diagnostics; bound_only: no step ran.
  void install(Context& ctx, PlanEntry& e, std::unique_ptr<ReplayHandle> h, const std::vector<int>& outputs,
               bool bound_only) const;
  // Allocates the layout's blocks from the pool and places every frozen tensor of e.
  Status place_memory(Context& ctx, PlanEntry& e) const;
  void build_jit_plan(Context& ctx, PlanEntry& e) const;
  // Statistics, latency diagnostics and the report after a call.
  void finish_call(PlanEntry& e, double us, bool replayed, const char* fallback, ExecutionReport* report) const;
  void report_pool_moves() const;
  std::string describe(const TensorArg* args) const;
  mutable ShapeVariety variety_;  // new signatures, for SHAPES_VARY

  Config c_;
  // threads->colocation_moves() as last reported to the diagnostics (LATENCY, POOL_WORKER_MOVED).
  mutable std::atomic<uint32_t> reported_pool_moves_{0};
};

}  // namespace sdx::runtime
